import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { AddressSet, clientAddress, formatSubnet, parseAddress, subnetOf, type Address } from '../../src/access/address.js';

const test = suite('client addresses');
const addr = (s: string): Address => {
  const a = parseAddress(s);
  if (!a) throw new Error(`did not parse ${s}`);
  return a;
};

test('IPv4, IPv6 in every spelling, and IPv4-mapped IPv6 as IPv4', () => {
  assert.equal(addr('10.1.2.3'), { v4: 0x0a010203 });
  assert.equal(addr('0000:0000:0000:0000:0000:ffff:7f00:0001'), { v4: 0x7f000001 }, 'how a dual-stack listener reports IPv4');
  assert.equal(addr('::ffff:127.0.0.1'), { v4: 0x7f000001 });
  assert.equal(addr('2001:db8::1'), { v6: [0x2001, 0xdb8, 0, 0, 0, 0, 0, 1] });
  assert.equal(addr('::1'), { v6: [0, 0, 0, 0, 0, 0, 0, 1] });
  assert.equal(addr('[2001:db8::1]'), addr('2001:db8::1'));
  for (const bad of ['', 'x', '1.2.3', '1.2.3.256', '2001:db8:::1', '1:2:3:4:5:6:7:8:9', '12345::1']) assert.is(parseAddress(bad), null, bad);
});

test('subnets: a.b.0.0/16 for IPv4, the first 32 bits for IPv6', () => {
  assert.is(subnetOf(addr('10.1.2.3')), subnetOf(addr('10.1.200.9')));
  assert.is.not(subnetOf(addr('10.1.2.3')), subnetOf(addr('10.2.2.3')));
  assert.is(subnetOf(addr('::ffff:10.1.2.3')), subnetOf(addr('10.1.7.7')));
  assert.is(subnetOf(addr('2001:db8:1::1')), subnetOf(addr('2001:db8:ffff::2')));
  assert.is.not(subnetOf(addr('2001:db8::1')), subnetOf(addr('2001:db9::1')));
  assert.is.not(subnetOf(addr('0:a01::')), subnetOf(addr('10.1.0.0')), 'IPv6 never collides with IPv4');
  assert.is(formatSubnet(subnetOf(addr('10.1.2.3'))), '10.1.0.0/16');
  assert.is(formatSubnet(subnetOf(addr('2001:db8::1'))), '2001:db8::/32');
});

test('trusted proxies: addresses and CIDR ranges; the right-most untrusted hop is the client', () => {
  const trusted = new AddressSet(['127.0.0.1', '10.0.0.0/8', 'fd00::/8']);
  assert.ok(trusted.has(addr('10.200.1.1')));
  assert.ok(trusted.has(addr('fd12::1')));
  assert.not.ok(trusted.has(addr('11.0.0.1')));
  const peer = addr('127.0.0.1');
  assert.equal(clientAddress(peer, '203.0.113.9, 10.1.1.1', trusted), addr('203.0.113.9'));
  assert.equal(clientAddress(peer, '198.51.100.1, 203.0.113.9', trusted), addr('203.0.113.9'), 'a client cannot choose by prepending');
  assert.equal(clientAddress(peer, 'garbage, 10.1.1.1', trusted), peer, 'an unparsable hop: the peer');
  assert.equal(clientAddress(peer, '10.1.1.1, 10.2.2.2', trusted), addr('10.1.1.1'), 'all trusted: the left-most');
  assert.equal(clientAddress(addr('198.51.100.7'), '203.0.113.9', trusted), addr('198.51.100.7'), 'untrusted peer');
  assert.throws(() => new AddressSet(['10.0.0.0/33']), /prefix length/);
  assert.throws(() => new AddressSet(['proxy.local']), /not an IP address/);
});

test.run();
