// Makes docs/web-page.png, the README's picture of the page. Run by hand after a change to the
// page: `node crates/wasm/e2e/screenshot.mjs` (after scripts/test-web.sh has built everything).

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT, analyse, openBrowser, openPage, startServer } from './harness.mjs';

const DUMP = 'corpus/lints/RL402-missing-hook-jump/fail-filter-builtins-flushed-by-firewall-reload.txt';

const server = await startServer();
const { browser, page, errors } = await openBrowser();
try {
  await page.setViewportSize({ width: 1360, height: 860 });
  await openPage(page, server.url);
  await page.fill('[data-testid="dump-name"]', 'node-a.txt');
  await page.fill('[data-testid="dump-input"]', readFileSync(path.join(ROOT, DUMP), 'utf8'));
  await page.locator('[data-testid="dump-input"]').evaluate((t) => { t.rows = 6; t.scrollTop = 0; });
  await analyse(page);
  await page.locator('[data-testid="finding"]').first().click();
  await page.locator('[data-testid="highlighted-line"]').waitFor();
  await page.screenshot({ path: path.join(ROOT, 'docs/web-page.png') });
  if (errors.length) throw new Error(errors.join('; '));
  console.log('wrote docs/web-page.png');
} finally {
  await browser.close();
  await server.stop();
}
