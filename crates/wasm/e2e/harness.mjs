// Shared by the end-to-end tests and the perf script: the real `rulelint serve` binary on
// 127.0.0.1, Debian's Chromium driven by playwright-core, and the CLI for expected results.

import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** Cargo's target directory as cargo resolves it ($CARGO_TARGET_DIR, config files), never
 *  assumed to be `target/`: CI caches often move it. */
function targetDir() {
  const run = spawnSync('cargo', ['metadata', '--format-version', '1', '--no-deps'],
    { cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 26 });
  if (run.status !== 0) {
    throw new Error(`cargo metadata exited ${run.status}: ${run.stderr}`);
  }
  return JSON.parse(run.stdout).target_directory;
}

export const TARGET = targetDir();
export const SCREENSHOTS = path.join(TARGET, 'e2e-screenshots');

/** The CLI under test: $RULELINT_BIN, else the debug build scripts/test-web.sh makes. */
export const BIN = process.env.RULELINT_BIN || path.join(TARGET, 'debug/rulelint');

/** The flags the issue lists, plus QUIC off: as root on a closed network. */
export const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--disable-quic',
];

/** Runs the CLI and returns its parsed JSON output (exit 0 and 1 are both normal for check). */
export function cliJson(...args) {
  const run = spawnSync(BIN, args, { cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 30 });
  if (run.status !== 0 && run.status !== 1) {
    throw new Error(`${BIN} ${args.join(' ')} exited ${run.status}: ${run.stderr}`);
  }
  return JSON.parse(run.stdout);
}

/** Starts `rulelint serve --port 0` and resolves to {url, stop} once it prints its URL. */
export function startServer() {
  const child = spawn(BIN, ['serve', '--port', '0'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => fail(new Error(`rulelint serve printed no URL: ${out}${err}`)), 15000);
    const fail = (e) => {
      clearTimeout(timer);
      child.kill();
      reject(e);
    };
    child.stderr.on('data', (d) => { err += d; });
    child.on('exit', (code) => fail(new Error(`rulelint serve exited ${code}: ${err}`)));
    child.stdout.on('data', (d) => {
      out += d;
      const m = /http:\/\/127\.0\.0\.1:(\d+)\//.exec(out);
      if (m) {
        clearTimeout(timer);
        child.removeAllListeners('exit');
        resolve({
          url: m[0],
          port: Number(m[1]),
          stop: () => new Promise((done) => {
            child.once('exit', done);
            child.kill();
          }),
        });
      }
    });
  });
}

/**
 * Launches Chromium with one page, recording every request and every console error.
 * Returns {browser, page, requests, errors}.
 */
export async function openBrowser() {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: CHROMIUM_ARGS,
    chromiumSandbox: false,
  });
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  const requests = [];
  const errors = [];
  // Context-wide, so the worker's requests are seen too.
  context.on('request', (r) => requests.push(r.url()));
  const page = await context.newPage();
  page.on('console', (m) => { if (m.type() === 'error') errors.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => errors.push(`page: ${e.message}`));
  page.on('worker', (w) => w.on('console', (m) => { if (m.type() === 'error') errors.push(`worker: ${m.text()}`); }));
  return { browser, context, page, requests, errors };
}

/** Opens the page and waits until the analyser (wasm in the worker) is ready. */
export async function openPage(page, url) {
  await page.goto(url);
  await page.waitForSelector('body[data-state="ready"]', { timeout: 30000 });
}

/** Clicks analyse and waits for the result (or failure); returns the elapsed time the page shows. */
export async function analyse(page, timeout = 120000) {
  await page.evaluate(() => { document.body.dataset.state = 'clicked'; });
  await page.click('[data-testid="analyse"]');
  await page.waitForFunction(() => ['done', 'failed'].includes(document.body.dataset.state)
    && !document.querySelector('[data-testid="analyse"]').disabled, null, { timeout });
  const state = await page.evaluate(() => document.body.dataset.state);
  if (state !== 'done') throw new Error(`analysis failed: ${await page.textContent('#status-text')}`);
  return Number(await page.getAttribute('#status-text', 'data-elapsed-ms'));
}

export async function screenshot(page, name) {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: false });
}
