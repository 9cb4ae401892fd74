// The console's token sign-in in a real headless Chromium:
//   AGENTS_CHROMIUM=/path/to/chromium node token-login.mjs BASE_URL SCREENSHOT_DIR GOOD_TOKEN TAMPERED_TOKEN
// A tampered token is refused on the page with the authenticator's reason; the signed one
// signs its principal in. Exits non-zero with the reason on the first failure.
import { chromium } from "playwright-core";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

const [base, shots, good, tampered] = process.argv.slice(2);
if (!base || !shots || !good || !tampered) throw new Error("usage: node token-login.mjs BASE SHOTS GOOD TAMPERED");
mkdirSync(shots, { recursive: true });

function check(ok, message) {
  if (!ok) throw new Error(message);
}

// The browser the Rust test found (`agents_test_support::chromium`: AGENTS_CHROMIUM, else
// Chromium or Chrome on PATH) and hands over in AGENTS_CHROMIUM.
function browserBinary() {
  const path = process.env.AGENTS_CHROMIUM;
  if (!path) throw new Error("AGENTS_CHROMIUM is not set: start this driver from its cargo test, or set it to a Chromium or Chrome binary");
  return path;
}

const browser = await chromium.launch({
  executablePath: browserBinary(),
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-sync"],
});
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  context.setDefaultTimeout(20000);
  const page = await context.newPage();
  const requested = [];
  page.on("request", (r) => requested.push(r.url()));
  await page.goto(base + "/console");
  check(page.url().endsWith("/console/login"), "not sent to the login page: " + page.url());
  await page.getByLabel("Access token").fill(tampered);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.locator("#login-error", { hasText: "bad_signature" }).waitFor();
  check(page.url().endsWith("/console/login"), "a tampered token signed in");
  await page.screenshot({ path: join(shots, "12-token-refused.png"), fullPage: true });
  await page.getByLabel("Access token").fill(good);
  await Promise.all([page.waitForURL(base + "/console"), page.getByRole("button", { name: "Sign in" }).click()]);
  const who = page.locator("p.who");
  check(await who.getAttribute("data-user") === "dana", "signed in as " + await who.getAttribute("data-user"));
  check(await who.getAttribute("data-role") === "clinician", "the role is not the token's");
  await page.screenshot({ path: join(shots, "13-token-signed-in.png"), fullPage: true });
  const outside = requested.filter((u) => !u.startsWith(base + "/"));
  check(outside.length === 0, "requests outside the service: " + JSON.stringify(outside));
  console.log("token login e2e: refused the tampered token, signed in dana");
} catch (e) {
  console.error("token login e2e failed: " + (e && e.stack ? e.stack : e));
  await browser.close();
  process.exit(1);
}
await browser.close();
