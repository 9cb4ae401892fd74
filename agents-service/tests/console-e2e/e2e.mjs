// The web console in a real headless Chromium, against a running service:
//   AGENTS_CHROMIUM=/path/to/chromium node e2e.mjs BASE_URL SCREENSHOT_DIR
// Started by `cargo test -p agents-service --test suite console_browser::`, which serves the service
// and checks the audit log afterwards. Exits non-zero with the reason on the first failure.
import { chromium } from "playwright-core";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

const [base, shots] = process.argv.slice(2);
if (!base || !shots) throw new Error("usage: node e2e.mjs BASE_URL SCREENSHOT_DIR");
mkdirSync(shots, { recursive: true });

const SECRET_1 = "Tr0ub4dor-3x";
const SECRET_2 = "An0ther-Secret";
const TIMEOUT = 20000;

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

// Playwright launches with a fresh temporary profile of its own (its `userDataDir`).
const browser = await chromium.launch({
  executablePath: browserBinary(),
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});

/** Every request any page makes, to check none leaves the service. */
const requested = [];
const problems = [];

async function person(label, viewport) {
  const context = await browser.newContext({ viewport: viewport || { width: 1280, height: 800 } });
  context.setDefaultTimeout(TIMEOUT);
  const page = await context.newPage();
  page.on("request", (r) => requested.push(r.url()));
  page.on("pageerror", (e) => problems.push(label + ": page error: " + e.message));
  page.on("console", (m) => { if (m.type() === "error") problems.push(label + ": console: " + m.text()); });
  await page.goto(base + "/console");
  check(page.url().endsWith("/console/login"), label + ": not sent to the login page: " + page.url());
  await page.getByLabel(label).check();
  await Promise.all([page.waitForURL(base + "/console"), page.getByRole("button", { name: "Sign in" }).click()]);
  return { context, page };
}

async function shot(page, name) {
  await page.screenshot({ path: join(shots, name + ".png"), fullPage: true });
}

async function send(page, text) {
  await page.getByLabel("Message").fill(text);
  await page.getByLabel("Message").press("Enter");
}

/** Waits until the live audit pane lists a record with `status` for `tool`. */
async function auditShows(page, tool, status) {
  await page.locator(`#audit-live li[data-status="${status}"]`, { hasText: tool }).first().waitFor();
}

try {
  // The login page.
  {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    page.on("request", (r) => requested.push(r.url()));
    await page.goto(base + "/console");
    await shot(page, "01-login");
    await context.close();
  }

  // A clinician asks for a change; the card shows the value she typed; she approves.
  const priya = await person("Priya (clinician)");
  let page = priya.page;
  await send(page, "change the portal password of ath-1 to " + SECRET_1);
  let card = page.locator("article.card", { hasText: "Change portal password" });
  await card.waitFor();
  const shown = await card.locator("dd").allTextContents();
  check(shown.includes(SECRET_1), "the card does not show the typed value: " + JSON.stringify(shown));
  await auditShows(page, "change_portal_password", "proposed");
  const proposedText = await page.locator("#audit-live").textContent();
  check(!proposedText.includes(SECRET_1), "the audit pane shows the secret");
  const proposedItem = page.locator('#audit-live li[data-status="proposed"]', { hasText: "change_portal_password" }).first();
  check((await proposedItem.textContent()).includes("values omitted"), "the audit pane does not say the values are omitted");
  const toolCall = await page.locator("#log").textContent();
  check(!toolCall.includes(SECRET_1) || toolCall.indexOf(SECRET_1) === toolCall.lastIndexOf(SECRET_1),
    "the event stream carried the secret beyond the user's own message");
  await shot(page, "02-proposal-card");
  // Keyboard only: from the top of the page, the Tab key reaches the card's Approve button and
  // Enter presses it.
  await page.evaluate(() => document.activeElement && document.activeElement.blur());
  const approve = card.getByRole("button", { name: "Approve" });
  let reached = false;
  for (let i = 0; i < 60 && !reached; i++) {
    await page.keyboard.press("Tab");
    reached = await approve.evaluate((b) => b === document.activeElement);
  }
  check(reached, "the Approve button cannot be reached with the Tab key");
  await page.keyboard.press("Enter");
  await auditShows(page, "change_portal_password", "executed");
  await page.locator("#log li.assistant", { hasText: "done" }).first().waitFor();
  await shot(page, "03-approved-executed");

  // Another proposal, rejected with a reason.
  await send(page, "move ath-1 to squad U21");
  card = page.locator("article.card", { hasText: "Move athlete to squad" });
  await card.waitFor();
  await card.getByLabel(/Reason for rejecting/).fill("wrong squad, ask the coach first");
  await card.getByRole("button", { name: "Reject" }).click();
  await auditShows(page, "move_athlete", "rejected");
  await shot(page, "04-rejected");

  // "Yes, but squad U23": the proposal ends rejected with the person's words, and the agent's
  // new proposal is a card of its own, approved on its own; the old call never runs.
  await send(page, "move ath-1 to squad U21");
  card = page.locator("article.card", { hasText: "Move athlete to squad" });
  await card.waitFor();
  const oldCall = await card.getAttribute("data-call");
  check((await card.locator("dd").allTextContents()).includes("U21"), "the first proposal is not for U21");
  check(await card.locator("p.warning").count() === 0, "the user's own values carry a warning");
  await card.getByLabel(/Change to ask for/).fill("squad U23 instead");
  await card.getByRole("button", { name: "Ask for this change" }).click();
  const changed = page.locator("article.card", { hasText: "Move athlete to squad" }).filter({ hasText: "U23" });
  await changed.waitFor();
  const newCall = await changed.getAttribute("data-call");
  check(newCall && newCall !== oldCall, "the change did not become a new proposal: " + newCall + " / " + oldCall);
  check(await page.locator(`article.card[data-call="${oldCall}"]`).count() === 0, "the old proposal is still open");
  await shot(page, "04b-change-asked");
  await changed.getByRole("button", { name: "Approve" }).click();
  await page.locator("#audit-live li[data-status=executed]", { hasText: "move_athlete" }).first().waitFor();
  const oldRecords = await page.evaluate(async (id) =>
    (await fetch("/v1/audit?call=" + encodeURIComponent(id), { headers: { "x-agents-console": "1" } })).json(), oldCall);
  const oldStatuses = oldRecords.records.map((r) => r.status);
  check(JSON.stringify(oldStatuses) === JSON.stringify(["proposed", "rejected"]), "the old call: " + oldStatuses);
  check(oldRecords.records[1].reason.includes("change requested: squad U23 instead"), "the old call's reason: " + oldRecords.records[1].reason);

  // A squad the model copied from a note in a tool result: the card warns in the runtime's
  // words and marks the argument; the person's own values (above) carried no warning.
  await send(page, "move ath-1 to the squad the coach's note names");
  card = page.locator("article.card", { hasText: "Move athlete to squad" }).filter({ hasText: "Academy-North" });
  await card.waitFor();
  const warning = await card.locator("p.warning").textContent();
  check(warning.includes("argument `squad` was copied from the result of `list_athletes`"), "the card does not warn: " + warning);
  check(await card.locator('dd.flagged').allTextContents().then((t) => JSON.stringify(t)) === '["Academy-North"]',
    "the copied argument is not the one marked");
  await shot(page, "04c-warned");
  const warnedCall = await card.getAttribute("data-call");
  await card.getByRole("button", { name: "Reject" }).click();
  await page.locator(`article.card[data-call="${warnedCall}"]`).waitFor({ state: "detached" });
  // The audit log keeps where the values came from, not the values.
  let warnedRecords = { records: [] };
  for (let i = 0; i < 100 && !warnedRecords.records.some((r) => r.status === "rejected"); i++) {
    if (i > 0) await page.waitForTimeout(200);
    warnedRecords = await page.evaluate(async (id) =>
      (await fetch("/v1/audit?call=" + encodeURIComponent(id), { headers: { "x-agents-console": "1" } })).json(), warnedCall);
  }
  const warnedStatuses = warnedRecords.records.map((r) => r.status);
  check(JSON.stringify(warnedStatuses) === JSON.stringify(["proposed", "rejected"]), "the warned call: " + warnedStatuses);
  const origins = warnedRecords.records[0].reason || "";
  check(origins.includes("`squad` from the result of `list_athletes`") && !origins.includes("Academy-North"),
    "the proposed record's origins: " + origins);

  // A third, decided after a reload of the page.
  await send(page, "change the portal password of ath-1 to " + SECRET_2);
  await page.locator("article.card", { hasText: "Change portal password" }).waitFor();
  await page.reload();
  card = page.locator("article.card", { hasText: "Change portal password" });
  await card.waitFor();
  check((await card.locator("dd").allTextContents()).includes(SECRET_2), "after a reload the card lost the typed value");
  await shot(page, "05-after-reload");

  // Meanwhile: another clinician of the same organisation sees none of it.
  const marco = await person("Marco (clinician)");
  await marco.page.locator("#no-decisions").waitFor();
  check(await marco.page.locator("article.card").count() === 0, "another user sees a proposal card");
  const decisions = await marco.page.evaluate(async () =>
    (await fetch("/v1/decisions", { headers: { "x-agents-console": "1" } })).json());
  check(decisions.decisions.length === 0, "another user is listed a proposal: " + JSON.stringify(decisions));
  // The refusals below are expected; the browser logs each as a failed load.
  const before = problems.length;
  const pending = await page.locator("article.card").getAttribute("data-call");
  const stolen = await marco.page.evaluate(async (id) => (await fetch("/v1/decisions/" + id, {
    method: "POST", headers: { "x-agents-console": "1", "content-type": "application/json" },
    body: JSON.stringify({ verdict: "approve" }) })).status, pending);
  check(stolen === 404, "another user could decide: " + stolen);
  // Without the console's header, the cookie alone decides nothing.
  const forged = await page.evaluate(async (id) => (await fetch("/v1/decisions/" + id, {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ verdict: "approve" }) })).status, pending);
  check(forged === 403, "a cookie-authenticated write without the console header got " + forged);
  const expected = problems.splice(before);
  check(expected.length === 2 && expected.every((p) => p.includes("Failed to load resource")), "unexpected: " + expected);
  await shot(marco.page, "06-other-user");
  await marco.context.close();

  // A user of another organisation sees nothing of it either.
  const gil = await person("Gil (clinician, other club)");
  await gil.page.locator("#no-decisions").waitFor();
  const theirs = await gil.page.evaluate(async () =>
    (await fetch("/v1/audit?tool=change_portal_password", { headers: { "x-agents-console": "1" } })).json());
  check(theirs.records.length === 0, "another organisation reads the records");
  await gil.context.close();

  // Priya decides after the reload; the run she left goes on.
  await card.getByRole("button", { name: "Approve" }).click();
  await page.locator("#audit-live li[data-status=executed]").first().waitFor();
  await page.waitForFunction(() => document.querySelectorAll('#audit-live li[data-status="run_finished"]').length > 0
    || document.querySelectorAll('#audit-live li[data-status="executed"]').length > 0);
  await shot(page, "07-decided-after-reload");

  // Phone width.
  await page.setViewportSize({ width: 390, height: 844 });
  await shot(page, "08-phone");
  await priya.context.close();

  // The reviewer finds the records by tool and verifies the chain.
  const audrey = await person("Audrey (auditor)");
  page = audrey.page;
  await page.getByRole("link", { name: "Audit" }).click();
  await page.waitForURL(base + "/console/audit");
  await page.getByLabel("Tool").fill("change_portal_password");
  await page.getByRole("button", { name: "Search" }).click();
  // The rows answer the search for this tool, not the unfiltered list the page asked for on load.
  await page.locator('#records tbody[aria-busy="false"][data-query*="tool=change_portal_password"]').waitFor({ state: "attached" });
  await page.locator("#records tbody tr[data-status=executed]").first().waitFor();
  const statuses = await page.locator("#records tbody tr").evaluateAll((rows) => rows.map((r) => r.dataset.status));
  check(statuses.filter((s) => s === "executed").length === 2, "the reviewer does not find both executions: " + statuses);
  check(statuses.includes("proposed") && statuses.includes("confirmed"), "missing records: " + statuses);
  const proposedRow = await page.locator("#records tbody tr[data-status=proposed]").first().textContent();
  check(proposedRow.includes("values omitted"), "the reviewer's table does not say the values are omitted: " + proposedRow);
  await page.getByRole("button", { name: "Verify the chain" }).click();
  await page.locator("#verify-result .ok").first().waitFor();
  const severe = await page.locator("#severe-result").textContent();
  check(severe.includes("Severe failures: 0."), "the reviewer view does not count severe failures: " + severe);
  const body = await page.locator("body").textContent();
  check(!body.includes(SECRET_1) && !body.includes(SECRET_2), "the audit view shows a secret");
  await shot(page, "09-reviewer");
  await page.setViewportSize({ width: 390, height: 844 });
  await shot(page, "10-reviewer-phone");

  // The capability report of the agent, served live: its tools, the roles, the baseline diff.
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.getByRole("link", { name: "Capabilities" }).click();
  await page.waitForURL(base + "/console/report");
  await Promise.all([page.waitForURL(base + "/console/report/Physio"), page.getByRole("link", { name: "Physio" }).click()]);
  for (const tool of ["list_athletes", "move_athlete", "change_portal_password"]) {
    await page.locator(`#tools-table tr#tool-${tool}`).waitFor();
    await page.locator(`#capability-graph g.node.tool[data-tool="${tool}"]`).waitFor();
  }
  const risk = await page.locator("#tool-change_portal_password .badge.risk-high").textContent();
  check(risk === "high", "the report does not show the tool's risk: " + risk);
  await page.locator("#widening-banner").waitFor();
  check(await page.locator("#reachability-table th", { hasText: "auditor" }).count() === 1, "no role × tool table");
  // The linked style sheet applied (the header is dark), with no inline style the policy refuses.
  const headerBg = await page.locator("header").first().evaluate((h) => getComputedStyle(h).backgroundColor);
  check(headerBg === "rgb(15, 23, 42)", "the report's style sheet is not applied: " + headerBg);
  await shot(page, "11-report");
  await audrey.context.close();

  // Nothing outside the service was requested.
  const outside = requested.filter((u) => !u.startsWith(base + "/") && !u.startsWith("blob:") && !u.startsWith("data:"));
  check(requested.length > 0, "no request was seen");
  check(outside.length === 0, "requests outside the service: " + JSON.stringify(outside));
  check(problems.length === 0, "the pages reported problems: " + JSON.stringify(problems));
  console.log("console e2e: " + requested.length + " requests, all to the service; screenshots in " + shots);
} catch (e) {
  console.error("console e2e failed: " + (e && e.stack ? e.stack : e));
  console.error("page problems: " + JSON.stringify(problems));
  await browser.close();
  process.exit(1);
}
await browser.close();
