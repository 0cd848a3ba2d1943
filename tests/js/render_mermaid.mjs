// Renders a Mermaid diagram to PNG offline: mermaid's own bundle (npm `mermaid`) in headless
// Chromium, driven by playwright-core; nothing is fetched from the network.
// Usage: node render_mermaid.mjs NODE_MODULES_DIR CHROMIUM IN.mmd OUT.png
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const [modules, chromiumPath, input, output] = process.argv.slice(2);
const require = createRequire(path.join(modules, "package.json"));
const { chromium } = require("playwright-core");
const bundle = readFileSync(path.join(modules, "node_modules", "mermaid", "dist", "mermaid.min.js"), "utf8");
const diagram = readFileSync(input, "utf8");

const browser = await chromium.launch({
  executablePath: chromiumPath,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
});
try {
  const page = await browser.newPage({ deviceScaleFactor: 2 });
  await page.setContent("<!doctype html><body style='margin:0;background:white'><div id='g'></div></body>");
  await page.addScriptTag({ content: bundle });
  await page.evaluate(async (text) => {
    window.mermaid.initialize({ startOnLoad: false, securityLevel: "strict" });
    const { svg } = await window.mermaid.render("graph", text);
    document.getElementById("g").innerHTML = svg;
  }, diagram);
  await page.locator("#g svg").screenshot({ path: output, omitBackground: false });
} finally {
  await browser.close();
}
