/**
 * launchBrowser — a real headless Chromium for the dashboard's browser tests and screenshots,
 * with nothing to install by hand: `@sparticuz/chromium` carries the browser binary inside its
 * npm package (unpacked to the temp directory on first use) and `puppeteer-core` drives it.
 *
 * Each browser gets a fresh profile in a temp directory, removed on close; it runs without the
 * sandbox (the tests run as root), without a GPU, and with every background fetch Chromium does
 * on its own turned off, so a run makes no request beyond the pages it is told to open.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import chromium from '@sparticuz/chromium'
import puppeteer, { type Browser } from 'puppeteer-core'

/** A launched browser and the way to close it and remove its profile. */
export interface LaunchedBrowser {
  readonly browser: Browser
  close(): Promise<void>
}

/** Launches headless Chromium with a fresh profile. */
export async function launchBrowser(): Promise<LaunchedBrowser> {
  const userDataDir = mkdtempSync(path.join(tmpdir(), 'matchbox-chromium-'))
  const browser = await puppeteer.launch({
    executablePath: await chromium.executablePath(),
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      `--user-data-dir=${userDataDir}`,
    ],
  })
  return {
    browser,
    async close() {
      await browser.close()
      rmSync(userDataDir, { recursive: true, force: true })
    },
  }
}
