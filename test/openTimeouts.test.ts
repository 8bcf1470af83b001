/**
 * open() on `{ databaseUrl, connectTimeoutMs, statementTimeoutMs }`: the time bounds reach the
 * pool, so a server that accepts TCP and never answers makes `open()` reject with a typed
 * `Unavailable` within the connect bound instead of hanging; malformed or misplaced bounds are
 * `InvalidInput` naming the option.
 */
import { createServer, type Server, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { open } from '../src/index.ts'

describe('open() against a server that accepts TCP and never answers', () => {
  const sockets = new Set<Socket>()
  let server: Server
  let url: string
  beforeAll(async () => {
    server = createServer((socket) => {
      sockets.add(socket)
      socket.on('error', () => {})
      socket.on('close', () => sockets.delete(socket))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const address = server.address()
    if (address === null || typeof address === 'string') throw new Error('no TCP address')
    url = `postgres://matchbox@127.0.0.1:${address.port}/silent`
  })
  afterAll(async () => {
    for (const socket of sockets) socket.destroy()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  })

  // The default connect bound is 10 s: only the bound given to open() ends the attempt before this
  // test's own timeout, which is its hang guard. The error names the bound that ended it.
  it('rejects with Unavailable within connectTimeoutMs', { timeout: 5_000 }, async () => {
    const error = await open({ store: { databaseUrl: url, connectTimeoutMs: 200 } }).then(
      () => expect.fail('open succeeded against a silent server'),
      (reason: unknown) => reason,
    )
    expect(error).toMatchObject({ _tag: 'Unavailable', retryable: true, maybeCommitted: false })
    expect((error as Error).message).toMatch(/connection timeout/)
  })

  it('refuses malformed and misplaced bounds with InvalidInput naming the option', async () => {
    await expect(open({ store: { databaseUrl: url, connectTimeoutMs: 0 } })).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'options.store.connectTimeoutMs' })
    await expect(open({ store: { databaseUrl: url, statementTimeoutMs: 1.5 } })).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'options.store.statementTimeoutMs' })
    await expect(open({ store: { dataDir: '/tmp/x', connectTimeoutMs: 5 } as never })).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'options.store.connectTimeoutMs' })
    await expect(open({ store: { databaseUrl: url, colour: 'red' } as never })).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'options.store' })
  })
})
