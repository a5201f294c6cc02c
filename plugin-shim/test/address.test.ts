// Where the plugin connects: an IP address, never a name. `localhost` names
// go to 127.0.0.1 (the address the sidecar serves), an IP URL as written,
// any other name to what one lookup answers; and the address the proof
// names is written as the sidecar writes its own (`[::1]:8377`).

import assert from "node:assert/strict";
import { test } from "node:test";
import { canonicalIp, dialTarget, isLocalSidecarHost, isLocalhostName, socketAddress } from "../evolve-hud/address.ts";

const noLookup = async (name: string): Promise<never> => {
  throw new Error(`${name} was looked up`);
};

test("localhost and names under it are dialled at 127.0.0.1, with no lookup", async () => {
  for (const url of ["http://localhost:8377", "http://LOCALHOST:8377", "http://localhost.:8377", "http://hud.localhost:8377"]) {
    assert.deepEqual(await dialTarget(url, noLookup), {
      base: "http://127.0.0.1:8377",
      ip: "127.0.0.1",
      port: 8377,
      address: "127.0.0.1:8377",
    }, url);
  }
  assert.ok(isLocalhostName("a.b.localhost"));
  assert.ok(!isLocalhostName("localhost.example.com"), "a name that only starts with localhost is not one");
  assert.ok(!isLocalhostName("notlocalhost"));
});

test("an IP in the URL is dialled as written, in the sidecar's form", async () => {
  assert.equal((await dialTarget("http://127.0.0.1:9000", noLookup)).address, "127.0.0.1:9000");
  assert.equal((await dialTarget("http://[::1]:9000", noLookup)).address, "[::1]:9000");
  assert.equal((await dialTarget("http://[0:0:0:0:0:0:0:1]:9000", noLookup)).address, "[::1]:9000", "compressed");
  assert.equal((await dialTarget("http://[::ffff:127.0.0.1]:9000", noLookup)).address, "127.0.0.1:9000", "IPv4 mapped into IPv6 is the IPv4 one");
  const v6 = await dialTarget("http://[FE80:0:0:0:1:0:0:2]:9000", noLookup);
  assert.equal(v6.address, "[fe80::1:0:0:2]:9000", "lower case, the first longest run of zeros compressed");
  assert.equal(v6.base, "http://[fe80::1:0:0:2]:9000");
  assert.equal(v6.ip, "fe80::1:0:0:2");
});

test("another name is looked up once, and the address found is dialled", async () => {
  const asked: string[] = [];
  const lookup = async (name: string) => {
    asked.push(name);
    return name === "box.lan" ? { address: "192.168.1.7", family: 4 } : { address: "2001:db8:0:0:0:0:0:5", family: 6 };
  };
  assert.deepEqual(await dialTarget("http://box.lan:8377", lookup), {
    base: "http://192.168.1.7:8377",
    ip: "192.168.1.7",
    port: 8377,
    address: "192.168.1.7:8377",
  });
  assert.equal((await dialTarget("http://v6.lan:8377", lookup)).address, "[2001:db8::5]:8377");
  assert.deepEqual(asked, ["box.lan", "v6.lan"]);
  await assert.rejects(dialTarget("http://odd.lan", async () => ({ address: "not-an-ip", family: 4 })), /not an IP address/);
});

test("the URL keeps its path and scheme; the default port is written out", async () => {
  assert.deepEqual(await dialTarget("http://localhost/hud/", noLookup), {
    base: "http://127.0.0.1:80/hud",
    ip: "127.0.0.1",
    port: 80,
    address: "127.0.0.1:80",
  });
  assert.equal((await dialTarget("https://127.0.0.1", noLookup)).address, "127.0.0.1:443");
});

test("canonical IPs and socket addresses", () => {
  assert.equal(canonicalIp("127.0.0.1"), "127.0.0.1");
  assert.equal(canonicalIp("[::1]"), "::1");
  assert.equal(canonicalIp("::ffff:7f00:1"), "127.0.0.1");
  assert.equal(canonicalIp("2001:DB8::0:1"), "2001:db8::1");
  assert.equal(canonicalIp("1:0:1:0:1:0:1:0"), "1:0:1:0:1:0:1:0", "a single zero is not compressed");
  assert.equal(canonicalIp("localhost"), undefined);
  assert.equal(socketAddress("::1", 8377), "[::1]:8377");
  assert.equal(socketAddress("127.0.0.1", 8377), "127.0.0.1:8377");
});

test("a sidecar this machine may start: localhost names and the loopback addresses it serves", () => {
  for (const host of ["localhost", "hud.localhost", "127.0.0.1", "[::1]"]) assert.ok(isLocalSidecarHost(host), host);
  for (const host of ["127.0.0.2", "example.com", "[::2]", "10.0.0.1"]) assert.ok(!isLocalSidecarHost(host), host);
});
