/**
 * TcpProxy — a repointable TCP front for a PostgreSQL server's Unix socket (node:net), the
 * address engines are given in the failover test so it can move them from one server to another
 * as a virtual IP or a connection router would.
 *
 * `point(socketPath)` sends new connections there and leaves open ones where they are (an engine
 * that keeps talking to the server it had); `point(null)` refuses new connections (closes them
 * at once); `cut()` closes every open pair, as a network partition does. Each accepted
 * connection is piped both ways; when either side ends or fails, both are destroyed.
 *
 * Does not: look inside the protocol.
 */
import net from 'node:net'

/** A running proxy on 127.0.0.1. */
export interface TcpProxy {
  readonly port: number
  /** The connection string of `database` through the proxy. */
  url(database: string): string
  point(socketPath: string | null): void
  /** Destroys every open connection pair. */
  cut(): void
  /** Connections accepted so far (refused ones included). */
  accepted(): number
  close(): Promise<void>
}

/** Starts a proxy to `socketPath` (or refusing, for null). */
export async function startTcpProxy(socketPath: string | null): Promise<TcpProxy> {
  let target = socketPath
  let accepted = 0
  const open = new Set<net.Socket>()
  const server = net.createServer((client) => {
    accepted++
    if (target === null) {
      client.destroy()
      return
    }
    const upstream = net.connect(target)
    const pair = [client, upstream]
    const end = () => {
      for (const socket of pair) {
        socket.destroy()
        open.delete(socket)
      }
    }
    for (const socket of pair) {
      open.add(socket)
      socket.on('error', end)
      socket.on('close', end)
    }
    client.pipe(upstream)
    upstream.pipe(client)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address() as net.AddressInfo
  return {
    port: address.port,
    url: (database) => `postgresql://postgres@127.0.0.1:${address.port}/${database}`,
    point(next) {
      target = next
    },
    cut() {
      for (const socket of Array.from(open)) socket.destroy()
      open.clear()
    },
    accepted: () => accepted,
    close() {
      target = null
      for (const socket of Array.from(open)) socket.destroy()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
