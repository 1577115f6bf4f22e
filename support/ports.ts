import { createServer, type AddressInfo } from 'node:net';

/**
 * Distinct ports free right now, from the system, for servers started as
 * processes (which cannot be handed the kernel's pick of port 0). A number
 * picked at random could be the local port of one of the many client sockets
 * that tests and benchmarks open.
 */
export async function freePorts(count: number): Promise<number[]> {
  const probes = Array.from({ length: count }, () => createServer());
  await Promise.all(probes.map((probe) => new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))));
  const ports = probes.map((probe) => (probe.address() as AddressInfo).port);
  await Promise.all(probes.map((probe) => new Promise((resolve) => probe.close(resolve))));
  return ports;
}

export const freePort = async (): Promise<string> => String((await freePorts(1))[0]);
