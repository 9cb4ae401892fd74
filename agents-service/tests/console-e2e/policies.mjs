// The console under the application's policies for values from content the user did not
// write, in a real headless Chromium:
//   AGENTS_CHROMIUM=/path/to/chromium node policies.mjs REFUSE_URL CONFIRM_URL SCREENSHOT_DIR
// Started by `cargo test -p agents-service --test suite console_browser::`, which serves the two
// services (one refuses such a proposal, one asks a second confirmation) and checks their
// audit logs afterwards. Exits non-zero with the reason on the first failure.
import { chromium } from "playwright-core";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

const [refuseBase, confirmBase, shots] = process.argv.slice(2);
if (!refuseBase || !confirmBase || !shots) throw new Error("usage: node policies.mjs REFUSE_URL CONFIRM_URL SCREENSHOT_DIR");
mkdirSync(shots, { recursive: true });
const TIMEOUT = 20000;
const WARNING = "argument `squad` was copied from the result of `list_athletes`";

function check(ok, message) {
  if (!ok) throw new Error(message);
}

const path = process.env.AGENTS_CHROMIUM;
if (!path) throw new Error("AGENTS_CHROMIUM is not set: start this driver from its cargo test");
const browser = await chromium.launch({
  executablePath: path,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
const problems = [];
/** Every response refused with a 4xx or 5xx status, to say which load failed. */
const refused = [];

async function signIn(base, label) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  context.setDefaultTimeout(TIMEOUT);
  const page = await context.newPage();
  page.on("pageerror", (e) => problems.push(label + ": page error: " + e.message));
  // The browser's own request for a tab icon is not the console's.
  page.on("console", (m) => {
    const at = (m.location() || {}).url || "";
    if (m.type() === "error" && !at.endsWith("/favicon.ico")) problems.push(label + ": console: " + m.text() + " (" + at + ")");
  });
  page.on("response", (r) => { if (r.status() >= 400) refused.push(r.status() + " " + r.request().method() + " " + r.url()); });
  await page.goto(base + "/console");
  await page.getByLabel(label).check();
  await Promise.all([page.waitForURL(base + "/console"), page.getByRole("button", { name: "Sign in" }).click()]);
  return { context, page };
}

async function send(page, text) {
  await page.getByLabel("Message").fill(text);
  await page.getByLabel("Message").press("Enter");
}

async function statusesOf(page, tool) {
  const r = await page.evaluate(async (t) =>
    (await fetch("/v1/audit?tool=" + encodeURIComponent(t), { headers: { "x-agents-console": "1" } })).json(), tool);
  return r.records.map((x) => x.status);
}

try {
  // Refuse: the proposal never becomes a card; the run says it was refused, and why.
  {
    const { context, page } = await signIn(refuseBase, "Priya (clinician)");
    await send(page, "move ath-1 to the squad the coach's note names");
    await page.locator("#log li", { hasText: "move_athlete denied" }).first().waitFor();
    const said = await page.locator("#log li", { hasText: "move_athlete denied" }).first().textContent();
    check(said.includes("refused by the application's policy") && said.includes(WARNING), "the refusal: " + said);
    await page.locator("#log li.assistant", { hasText: "done" }).first().waitFor();
    await page.locator('#audit-live li[data-status="denied"]', { hasText: "move_athlete" }).first().waitFor();
    check(await page.locator("article.card").count() === 0, "a refused proposal became a card");
    const statuses = await statusesOf(page, "move_athlete");
    check(JSON.stringify(statuses) === '["denied"]', "the refused call's records: " + statuses);
    await page.screenshot({ path: join(shots, "20-refused.png"), fullPage: true });
    await context.close();
  }

  // Second confirmation: one click on Approve runs nothing and opens the second dialog with
  // the warning; only its "I checked" button runs the call.
  {
    const { context, page } = await signIn(confirmBase, "Priya (clinician)");
    await send(page, "move ath-1 to the squad the coach's note names");
    const card = page.locator("article.card", { hasText: "Move athlete to squad" });
    await card.waitFor();
    check(await card.locator("p.second-note").count() === 1, "the card does not say a second confirmation is needed");
    check(await card.locator(".second-confirmation [role=alertdialog]").count() === 0, "the second dialog shows before any approval");
    const before = problems.length;
    await card.getByRole("button", { name: "Approve" }).click();
    const dialog = card.getByRole("alertdialog", { name: "Second confirmation" });
    await dialog.waitFor();
    const text = await dialog.textContent();
    check(text.includes("You approved once; nothing ran") && text.includes(WARNING), "the second dialog: " + text);
    const ack = dialog.getByRole("button", { name: "I checked: " + WARNING });
    await ack.waitFor();
    check(await card.getByRole("button", { name: "Approve", exact: true }).count() === 0, "the first Approve is still offered");
    // The first approval is on record, and nothing ran.
    let statuses = [];
    for (let i = 0; i < 50 && !statuses.includes("first_approval"); i++) {
      if (i > 0) await page.waitForTimeout(100);
      statuses = await statusesOf(page, "move_athlete");
    }
    check(JSON.stringify(statuses) === '["proposed","first_approval"]', "after one approval: " + statuses);
    // The 409 that answered the first approval is the one expected failed load.
    const expected = problems.splice(before);
    check(expected.length === 1 && expected[0].includes("409"), "unexpected: " + expected);
    await page.screenshot({ path: join(shots, "21-second-confirmation.png"), fullPage: true });
    await ack.click();
    await page.locator('#audit-live li[data-status="executed"]', { hasText: "move_athlete" }).first().waitFor();
    await card.waitFor({ state: "detached" });
    statuses = await statusesOf(page, "move_athlete");
    check(JSON.stringify(statuses) === '["proposed","first_approval","confirmed","executed"]', "after the second: " + statuses);
    await page.screenshot({ path: join(shots, "22-acknowledged.png"), fullPage: true });
    await context.close();
  }
  check(problems.length === 0, "the pages reported problems: " + JSON.stringify(problems));
  console.log("console policies e2e: refused and confirmed twice; screenshots in " + shots);
} catch (e) {
  console.error("console policies e2e failed: " + (e && e.stack ? e.stack : e));
  console.error("page problems: " + JSON.stringify(problems));
  console.error("refused responses: " + JSON.stringify(refused));
  await browser.close();
  process.exit(1);
}
await browser.close();
