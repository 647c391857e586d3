import { CURRENT_ANNOUNCEMENT } from "@rlc/shared/bundle";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig, requireControllerUrls, splitHostPort } from "./config.js";

describe("loadConfig", () => {
  it("refuses an http:// controller unless RL_INSECURE=true; takes RL_CA_HASH", () => {
    expect(() => loadConfig({ RL_CONTROLLER_URL: "http://controller.example.net" })).toThrow(
      /RL_CONTROLLER_URL: must be https:\/\/ \(http:\/\/ only with RL_INSECURE=true\)/,
    );
    expect(loadConfig({ RL_CONTROLLER_URL: "http://controller.example.net", RL_INSECURE: "true" })).toMatchObject({
      controllerUrls: ["http://controller.example.net"],
      insecure: true,
    });
    expect(loadConfig({ RL_CA_HASH: `sha256:${"AB".repeat(32)}` }).caHash).toBe(`sha256:${"ab".repeat(32)}`);
    expect(() => loadConfig({ RL_CA_HASH: "abc" })).toThrow(/RL_CA_HASH/);
  });

  it("fills the documented defaults", () => {
    expect(loadConfig({})).toEqual({
      controllerUrls: [],
      grpcUrls: [],
      grpcTlsCa: undefined,
      caHash: undefined,
      insecure: false,
      enrollmentToken: undefined,
      stateDir: "/var/lib/rl-agent",
      birdSocket: "/run/bird/bird.ctl",
      birdConfigPath: "/etc/bird/rl-routes.conf",
      birdMode: "include",
      birdBin: "bird",
      natsUrl: undefined,
      natsCreds: undefined,
      metricsListen: "127.0.0.1:9469",
      pollSeconds: 30,
      healthWaitSeconds: 0,
      logLevel: "info",
      announcement: CURRENT_ANNOUNCEMENT,
    });
  });

  it("RL_BUNDLE_FORMATS=rl-bundle/1 makes the agent of the release before: it announces nothing", () => {
    expect(loadConfig({ RL_BUNDLE_FORMATS: "rl-bundle/1" }).announcement).toBeNull();
    expect(loadConfig({ RL_BUNDLE_FORMATS: "rl-bundle/2, rl-bundle/1" }).announcement).toEqual(CURRENT_ANNOUNCEMENT);
    expect(() => loadConfig({ RL_BUNDLE_FORMATS: "rl-bundle/3" })).toThrow(/RL_BUNDLE_FORMATS/);
  });

  it("takes every variable, and bird.conf itself in full mode", () => {
    const c = loadConfig({
      RL_CONTROLLER_URL: "https://controller.example.net/",
      RL_GRPC_URL: "controller.example.net:50051",
      RL_ENROLLMENT_TOKEN: " token ",
      RL_STATE_DIR: "/srv/rl",
      RL_BIRD_MODE: "full",
      RL_NATS_URL: "nats://a:4222,nats://b:4222",
      RL_METRICS_LISTEN: "off",
      RL_POLL_SECONDS: "5",
    });
    expect(c).toMatchObject({
      controllerUrls: ["https://controller.example.net"],
      grpcUrls: ["controller.example.net:50051"],
      enrollmentToken: "token",
      stateDir: "/srv/rl",
      birdMode: "full",
      birdConfigPath: "/etc/bird/bird.conf",
      natsUrl: "nats://a:4222,nats://b:4222",
      metricsListen: null,
      pollSeconds: 5,
    });
    expect(requireControllerUrls(c)).toEqual(["https://controller.example.net"]);
  });

  it("takes a list of controller replicas for HTTP and gRPC, in order, without repeats", () => {
    const c = loadConfig({
      RL_CONTROLLER_URL: "https://a.example.net:8443/, https://b.example.net:8443,https://a.example.net:8443",
      RL_GRPC_URL: "a.example.net:50051,[2001:db8::2]:50051, a.example.net:50051",
    });
    expect(c.controllerUrls).toEqual(["https://a.example.net:8443", "https://b.example.net:8443"]);
    expect(c.grpcUrls).toEqual(["a.example.net:50051", "[2001:db8::2]:50051"]);
    expect(() => loadConfig({ RL_GRPC_URL: "a.example.net:50051,b.example.net" })).toThrow(/RL_GRPC_URL: must be host:port or a comma-separated list/);
    expect(() => loadConfig({ RL_GRPC_URL: "a.example.net:50051,b.example.net:70000" })).toThrow(/RL_GRPC_URL: port must be 0\.\.65535/);
    expect(() => loadConfig({ RL_CONTROLLER_URL: "https://a.example.net,ftp://b.example.net" })).toThrow(
      /RL_CONTROLLER_URL: must be an http:\/\/ or https:\/\/ URL/,
    );
    expect(() => loadConfig({ RL_CONTROLLER_URL: "https://a.example.net,http://b.example.net" })).toThrow(/http:\/\/ only with RL_INSECURE=true/);
  });

  it("lists every bad variable with what it should be", () => {
    let error: unknown;
    try {
      loadConfig({
        RL_CONTROLLER_URL: "ftp://x",
        RL_GRPC_URL: "controller",
        RL_BIRD_MODE: "partial",
        RL_POLL_SECONDS: "0",
        RL_METRICS_LISTEN: "127.0.0.1:70000",
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toMatch(/RL_CONTROLLER_URL: must be an http:\/\/ or https:\/\/ URL/);
    expect(message).toMatch(/RL_GRPC_URL: must be host:port/);
    expect(message).toMatch(/RL_BIRD_MODE: must be include or full/);
    expect(message).toMatch(/RL_POLL_SECONDS: must be at least 1/);
    expect(message.match(/RL_GRPC_URL/g)).toHaveLength(1);
    expect(message).toMatch(/RL_METRICS_LISTEN: port must be 0\.\.65535/);
  });

  it("wants an absolute BIRD_CONFIG_PATH, and a controller URL only where it is used", () => {
    expect(() => loadConfig({ BIRD_CONFIG_PATH: "rl-routes.conf" })).toThrow(/BIRD_CONFIG_PATH: must be an absolute path/);
    expect(() => requireControllerUrls(loadConfig({}))).toThrow(/RL_CONTROLLER_URL: required/);
  });

  it("splitHostPort - IPv4, names and bracketed IPv6", () => {
    expect(splitHostPort("127.0.0.1:9469")).toEqual({ host: "127.0.0.1", port: 9469 });
    expect(splitHostPort("[::1]:9469")).toEqual({ host: "::1", port: 9469 });
  });
});
