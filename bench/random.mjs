// Deterministic pseudo-random numbers and prefixes for the benches: the same inputs on every run.

/** xorshift32 from `seed`: a function answering numbers in [0, 1). */
export function xorshift(seed) {
  let s = seed;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
}

/** `n` distinct public-looking IPv4 /24s in 11-99.x.x (far from the bogon ranges), in the order drawn. */
export function publicSlash24s(n, rnd) {
  const set = new Set();
  while (set.size < n) set.add(`${11 + Math.floor(rnd() * 89)}.${Math.floor(rnd() * 256)}.${Math.floor(rnd() * 256)}.0/24`);
  return [...set];
}
