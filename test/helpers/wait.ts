/**
 * Waits until `probe` answers something truthy, asking every `stepMs`; throws naming `what`
 * after `ms`. The one polling loop of the tests: a bound here is how long a user would wait,
 * never a figure the test asserts.
 */
export async function until<T>(what: string, probe: () => Promise<T | null | undefined | false>, ms = 15_000, stepMs = 100): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}
