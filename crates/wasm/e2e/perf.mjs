// Measures (and prints, never asserts) the time to analyse a large dump in Chromium against
// native `rulelint check` on the same file. Run by hand:
//
//   cargo run --release -p rulelint-dumpgen -- --rules 250000 > /tmp/n250k.txt
//   RULELINT_BIN=target/release/rulelint node crates/wasm/e2e/perf.mjs /tmp/n250k.txt
//
// "page" is click to findings drawn (transfer to the worker, wasm check, JSON, DOM); "wasm" is
// the `check` call alone inside the worker; "chains"/"services" are the first opening of those
// views (each parses the dump again in the worker); "trace" is a Service's cluster IP traced from
// the Services view on the parse the check made (a wasm Session): the first trace prepares the
// dump's trace node, later ones only walk.

import { spawnSync } from 'node:child_process';
import { statSync } from 'node:fs';
import path from 'node:path';
import { BIN, analyse, openBrowser, openPage, startServer } from './harness.mjs';

const dump = path.resolve(process.argv[2] || '/tmp/n250k.txt');
const runs = Number(process.env.RUNS || 3);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = (x) => `${Math.round(x)} ms`;

function native() {
  const times = [];
  for (let i = 0; i < runs; i++) {
    const t0 = process.hrtime.bigint();
    const run = spawnSync(BIN, ['check', '--no-config', dump], { stdio: 'ignore' });
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    if (run.status !== 0 && run.status !== 1) throw new Error(`rulelint check exited ${run.status}`);
  }
  return times;
}

const server = await startServer();
const { browser, page, errors } = await openBrowser();
try {
  console.log(`dump: ${dump} (${(statSync(dump).size / 1e6).toFixed(1)} MB); binary: ${BIN}`);
  const nativeTimes = native();
  const pageTimes = [];
  const wasmTimes = [];
  let chains = 0;
  let services = 0;
  let traces = [];
  for (let i = 0; i < runs; i++) {
    await openPage(page, server.url);
    await page.setInputFiles('[data-testid="open-files"]', dump);
    await page.waitForFunction(() => document.querySelector('.dump-size').textContent !== '');
    pageTimes.push(await analyse(page));
    const timings = await page.evaluate(() => window.rulelintTimings);
    wasmTimes.push(timings.files[0].wasm);
    if (i === 0) {
      let t0 = Date.now();
      await page.click('[data-testid="chains-tab"]');
      await page.locator('[data-testid="chain-node"]').first().waitFor({ timeout: 120000 });
      chains = Date.now() - t0;
      t0 = Date.now();
      await page.click('[data-testid="services-tab"]');
      await page.locator('[data-testid="service"]').first().waitFor({ timeout: 120000 });
      services = Date.now() - t0;
      await page.locator('[data-testid="service-trace"]').first().click();
      for (let k = 0; k < 6; k++) {
        await page.evaluate(() => document.querySelector('[data-testid="trace-output"]').replaceChildren());
        await page.click('[data-testid="trace-button"]');
        await page.locator('[data-testid="trace-time"]').waitFor({ timeout: 120000 });
        traces.push(Number(await page.getAttribute('[data-testid="trace-time"]', 'data-ms')));
      }
    }
  }
  const findings = await page.locator('[data-testid="finding"]').count();
  console.log(`native rulelint check: ${nativeTimes.map(ms).join(', ')} (median ${ms(median(nativeTimes))})`);
  console.log(`page, click to findings: ${pageTimes.map(ms).join(', ')} (median ${ms(median(pageTimes))})`);
  console.log(`  of which wasm check:   ${wasmTimes.map(ms).join(', ')} (median ${ms(median(wasmTimes))})`);
  console.log(`page / native: ${(median(pageTimes) / median(nativeTimes)).toFixed(2)}x; findings shown: ${findings}`);
  console.log(`first chain view: ${ms(chains)}; first services page: ${ms(services)}`);
  console.log(`trace: first ${ms(traces[0])} (prepares the trace node, no parse), then ${traces.slice(1).map(ms).join(', ')}`);
  if (errors.length) console.log(`console errors: ${errors.join('; ')}`);
} finally {
  await browser.close();
  await server.stop();
}
