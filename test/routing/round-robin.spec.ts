import { describe, expect, it } from '@jest/globals';
import { NoServerAvailableError, RoundRobinRouter } from '../../src/routing';
import { makeRouter, request, servers } from './support/policy-harness';

describe('round_robin', () => {
  it('rotates over the servers in order', async () => {
    const s = servers(3);
    const r = makeRouter(new RoundRobinRouter(), 'round_robin', {}, s);
    const picked: string[] = [];
    for (let i = 0; i < 6; i++) picked.push((await r.getNextServer(request({ prompt: 'x' }))).server.url);
    expect(picked).toEqual([s[0], s[1], s[2], s[0], s[1], s[2]].map((x) => x.url));
  });

  it('skips an excluded server and keeps the rotation for the others', async () => {
    const s = servers(3);
    const r = makeRouter(new RoundRobinRouter(), 'round_robin', {}, s);
    expect((await r.getNextServer(request({}), { excludeServer: s[0].url })).server).toBe(s[1]);
    expect((await r.getNextServer(request({}))).server).toBe(s[2]);
    expect((await r.getNextServer(request({}), { excludeServer: [s[0].url, s[2].url] })).server).toBe(s[1]);
  });

  it('fails clearly when every server is excluded or none is left', async () => {
    const s = servers(2);
    const r = makeRouter(new RoundRobinRouter(), 'round_robin', {}, s);
    await expect(r.getNextServer(request({}), { excludeServer: s.map((x) => x.url) })).rejects.toThrow(NoServerAvailableError);
    await expect(r.getNextServer(request({}), { excludeServer: s.map((x) => x.url) })).rejects.toThrow(/no generation server available \(excluded: /);
    r.onServersUpdated([]);
    await expect(r.getNextServer(request({}))).rejects.toThrow('no generation server available');
  });

  it('follows servers added and removed mid-traffic, and load returns to zero', async () => {
    const s = servers(3);
    const r = makeRouter(new RoundRobinRouter(), 'round_robin', {}, [s[0], s[1]]);
    const a = request({});
    const b = request({});
    await r.getNextServer(a);
    r.addServer(s[2]);
    r.removeServer(s[0]);
    const picks = [];
    const more = Array.from({ length: 4 }, () => request({}));
    for (const q of more) picks.push((await r.getNextServer(q)).server);
    expect(picks).not.toContain(s[0]);
    expect(new Set(picks)).toEqual(new Set([s[1], s[2]]));
    await r.getNextServer(b);
    // The removed server's request still finishes and releases its load.
    await r.finishRequest(a);
    await r.finishRequest(b);
    expect(s[0].activeRequests).toBe(0);
    for (const q of more) await r.finishRequest(q);
    expect(r.inFlight).toBe(0);
    expect(s.map((x) => x.activeRequests)).toEqual([0, 0, 0]);
  });
});
