// A composite in the console, in a real headless Chromium:
//   AGENTS_CHROMIUM=/path/to/chromium node composite.mjs BASE_URL COMPOSITE NODE_PATH SCREENSHOT_DIR
// Started by `cargo test -p agents-service --test suite console_composite::`, which serves the
// composite and checks the audit log afterwards. The person starts the composite from the
// chat; the nested node's action shows as a card naming the node; another user of the club
// sees no card and cannot decide it; the person approves it on the card and it runs. Exits
// non-zero with the reason on the first failure.
import { chromium } from "playwright-core";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

const [base, composite, nodePath, shots] = process.argv.slice(2);
if (!base || !composite || !nodePath || !shots) {
  throw new Error("usage: node composite.mjs BASE_URL COMPOSITE NODE_PATH SCREENSHOT_DIR");
}
mkdirSync(shots, { recursive: true });
const TIMEOUT = 20000;

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

async function signIn(label) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  context.setDefaultTimeout(TIMEOUT);
  const page = await context.newPage();
  page.on("pageerror", (e) => problems.push(label + ": page error: " + e.message));
  page.on("console", (m) => {
    const at = (m.location() || {}).url || "";
    if (m.type() === "error" && !at.endsWith("/favicon.ico")) problems.push(label + ": console: " + m.text() + " (" + at + ")");
  });
  await page.goto(base + "/console");
  await page.getByLabel(label).check();
  await Promise.all([page.waitForURL(base + "/console"), page.getByRole("button", { name: "Sign in" }).click()]);
  return { context, page };
}

try {
  const { context, page } = await signIn("Priya (clinician)");
  await page.getByLabel("Agent").selectOption(composite);
  await page.getByLabel("Message").fill("move ath-1 to squad U21");
  await page.getByLabel("Message").press("Enter");

  // The nested node's action: a card that names the node, with no "Ask for this change" (a
  // node's agent is not asked on its own).
  const card = page.locator("article.card", { hasText: "Move athlete to squad" });
  await card.waitFor();
  const shown = await card.locator("p.node-path").getAttribute("data-node");
  check(shown === nodePath, "the card names node " + shown + ", not " + nodePath);
  check((await card.locator("dd").allTextContents()).includes("U21"), "the card does not show the squad");
  check(await card.getByRole("button", { name: "Ask for this change" }).count() === 0, "a node's card offers a change");
  await page.locator("#log li", { hasText: "(node " + nodePath + ")" }).first().waitFor();
  await page.screenshot({ path: join(shots, "30-nested-card.png"), fullPage: true });
  const call = await card.getAttribute("data-call");

  // Another clinician of the club: no card, and deciding it is refused.
  const marco = await signIn("Marco (clinician)");
  await marco.page.locator("#no-decisions").waitFor();
  check(await marco.page.locator("article.card").count() === 0, "another user sees the nested card");
  const before = problems.length;
  const stolen = await marco.page.evaluate(async (id) => (await fetch("/v1/decisions/" + encodeURIComponent(id), {
    method: "POST", headers: { "x-agents-console": "1", "content-type": "application/json" },
    body: JSON.stringify({ verdict: "approve" }) })).status, call);
  check(stolen === 404, "another user could decide the nested action: " + stolen);
  const expected = problems.splice(before);
  check(expected.length === 1 && expected[0].includes("Failed to load resource"), "unexpected: " + expected);
  await marco.context.close();

  // The person approves on the card: the node's action runs, the tree completes, and the live
  // audit shows the node's records with its path.
  await card.getByRole("button", { name: "Approve" }).click();
  await card.waitFor({ state: "detached" });
  await page.locator("#audit-live li[data-status=executed]", { hasText: "move_athlete" }).first().waitFor();
  const executed = await page.locator("#audit-live li[data-status=executed]", { hasText: "move_athlete" }).first().textContent();
  check(executed.includes(nodePath), "the live audit does not place the record in its node: " + executed);
  await page.locator("#log li", { hasText: "Run completed." }).first().waitFor();
  await page.screenshot({ path: join(shots, "31-nested-decided.png"), fullPage: true });

  // The reports page lists the composite; its report draws the graph with both nodes.
  await page.goto(base + "/console/report");
  await page.getByRole("link", { name: composite }).first().waitFor();
  const report = await page.goto(base + "/console/report/" + encodeURIComponent(composite));
  check(report.status() === 200, "the composite's report answered " + report.status());
  const drawn = await page.locator("body").textContent();
  const node = nodePath.split("/").pop();
  check(drawn.includes(composite) && drawn.includes(node) && drawn.includes("referral"), "the report lacks the graph: " + drawn.slice(0, 400));
  await page.screenshot({ path: join(shots, "32-composite-report.png"), fullPage: true });
  await context.close();
  check(problems.length === 0, "the pages reported problems: " + JSON.stringify(problems));
  console.log("console composite e2e: nested card decided; screenshots in " + shots);
} catch (e) {
  console.error("console composite e2e failed: " + (e && e.stack ? e.stack : e));
  console.error("page problems: " + JSON.stringify(problems));
  await browser.close();
  process.exit(1);
}
await browser.close();
