import { describe, expect, it } from "vitest";
import { fixtureContent } from "../../../../test/helpers/agent-fakes.js";
import type { StandInController } from "../../../../test/helpers/stand-in-controller.js";
import { deadAddress, standInSetup, statusReport } from "../../../../test/helpers/stand-in-grpc.js";
import { startTcpProxy } from "../../../../test/helpers/tcp-proxy.js";
import { until } from "../../../../test/helpers/wait.js";
import type { AgentGrpcClient } from "./grpc-client.js";

// Two replicas of one controller (stand-ins with the same speaker and node key): the client uses
// one, and moves to the other when it is lost.

const { cleanups, controller: replica, grpcClient: grpcClientOf } = standInSetup();

const client = (address: string[], nodeKey: string, speakerId: string, moves: string[] = []) =>
  grpcClientOf({ address, nodeKey, speakerId, onEndpoint: (a) => moves.push(a) });
const report = (speakerId: string) => statusReport(speakerId, "sessions_changed");

/** A Watch stream held until the test's end, `onConnected` called each time it is up. */
const watchOn = (grpcClient: AgentGrpcClient, speakerId: string, onConnected: () => void) => {
  const watch = grpcClient.watch({ onNotification: () => undefined, onConnected }, async () => ({
    speaker_id: speakerId,
    agent_version: "test",
    applied_revision_id: 0,
    applied_sequence: 0,
  }));
  cleanups.push(() => watch.stop());
};
const watches = (c: StandInController) => c.grpcCalls.filter((call) => call === "Watch").length;

describe("AgentGrpcClient with several controller endpoints", () => {
  it("the Watch stream moves to the next replica when its own is lost, and back round-robin when that one goes too", async () => {
    const [a, b] = [await replica(), await replica()];
    const moves: string[] = [];
    const grpcClient = client([a.grpcAddress, b.grpcAddress], a.nodeKey, a.speakerId, moves);
    let connects = 0;
    watchOn(grpcClient, a.speakerId, () => connects++);
    await until("the stream on the first replica", async () => connects === 1);
    expect([watches(a), watches(b), grpcClient.endpoint]).toEqual([1, 0, a.grpcAddress]);

    await a.stopGrpc();
    await until("the stream on the second replica", async () => connects === 2, 5000);
    expect([watches(a), watches(b), grpcClient.endpoint]).toEqual([1, 1, b.grpcAddress]);

    await a.startGrpc();
    await b.stopGrpc();
    await until("the stream back on the first replica", async () => connects === 3, 5000);
    expect([watches(a), watches(b), grpcClient.endpoint]).toEqual([2, 1, a.grpcAddress]);
    expect(moves).toEqual([b.grpcAddress, a.grpcAddress]);
  });

  it("a bundle or a report that finds no controller moves the next calls to the other replica", async () => {
    const b = await replica();
    const issue = await b.publish(fixtureContent());
    const grpcClient = client([await deadAddress(), b.grpcAddress], b.nodeKey, b.speakerId);
    await expect(grpcClient.fetchBundle(1, { maxBytes: 1_000_000 })).rejects.toMatchObject({ code: "controller_unreachable" });
    expect(grpcClient.endpoint).toBe(b.grpcAddress);
    expect(Buffer.from((await grpcClient.fetchBundle(1, { maxBytes: 1_000_000 })).bytes).equals(issue.bytes)).toBe(true);
    await grpcClient.reportStatus(report(b.speakerId));
    expect(b.reports.map((r) => r.via)).toEqual(["grpc"]);
  });

  it("a refusal is what every replica would answer: the client stays where it is", async () => {
    const [a, b] = [await replica(), await replica()];
    const grpcClient = client([a.grpcAddress, b.grpcAddress], "rlk_wrong", a.speakerId);
    await expect(grpcClient.reportStatus(report(a.speakerId))).rejects.toMatchObject({ code: "unauthenticated" });
    expect(grpcClient.endpoint).toBe(a.grpcAddress);
  });

  it("a call that runs out its time on a connection that carries nothing leaves it: the next call opens a new connection and gets through", async () => {
    const c = await replica();
    const issue = await c.publish(fixtureContent());
    const [host, port] = c.grpcAddress.split(":");
    const proxy = await startTcpProxy({ host: host as string, port: Number(port) });
    cleanups.push(() => proxy.close());
    const grpcClient = client([`127.0.0.1:${proxy.port}`], c.nodeKey, c.speakerId);
    await grpcClient.reportStatus(report(c.speakerId));
    // The connection stays open and answers nothing, as a wedged HTTP/2 connection does.
    proxy.stall();
    await expect(grpcClient.fetchBundle(1, { maxBytes: 1_000_000, timeoutMs: 300 })).rejects.toMatchObject({ code: "controller_unreachable" });
    expect(Buffer.from((await grpcClient.fetchBundle(1, { maxBytes: 1_000_000, timeoutMs: 10_000 })).bytes).equals(issue.bytes)).toBe(true);
    proxy.stall();
    await expect(grpcClient.reportStatus(report(c.speakerId), 300)).rejects.toMatchObject({ code: "controller_unreachable" });
    await grpcClient.reportStatus(report(c.speakerId), 10_000);
    expect(proxy.connections).toBe(3);
  });

  it("a Watch stream gone silent on a connection that carries nothing comes back on a new connection", async () => {
    const c = await replica();
    const [host, port] = c.grpcAddress.split(":");
    const proxy = await startTcpProxy({ host: host as string, port: Number(port) });
    cleanups.push(() => proxy.close());
    const grpcClient = grpcClientOf({ address: [`127.0.0.1:${proxy.port}`], nodeKey: c.nodeKey, speakerId: c.speakerId, watchIdleMs: 400 });
    let connects = 0;
    watchOn(grpcClient, c.speakerId, () => connects++);
    await until("the stream up", async () => connects === 1);
    proxy.stall();
    await until("the stream up again", async () => connects === 2, 5000);
    expect(proxy.connections).toBe(2);
  });
});
