// Parse Mermaid diagrams with Mermaid's own parser (mermaid.parse), under jsdom (no browser).
// Input on stdin: JSON [{"name": "...", "text": "flowchart TD ..."}, ...].
// Output on stdout: JSON [{"name": "...", "ok": true, "type": "flowchart-v2"} | {"name": "...", "ok": false, "error": "..."}].
// Exit status 1 when any diagram fails to parse (each failure's parser message is also printed on stderr).
import { JSDOM } from "jsdom";

const dom = new JSDOM("<!doctype html><html><body></body></html>", { pretendToBeVisual: true });
globalThis.window = dom.window;
globalThis.document = dom.window.document;
globalThis.DOMParser = dom.window.DOMParser;
globalThis.Element = dom.window.Element;
globalThis.HTMLElement = dom.window.HTMLElement;
globalThis.SVGElement = dom.window.SVGElement;

const { default: mermaid } = await import("mermaid");
mermaid.initialize({ startOnLoad: false, securityLevel: "strict" });

let input = "";
for await (const chunk of process.stdin) input += chunk;
const diagrams = JSON.parse(input);

const results = [];
let failed = 0;
for (const { name, text } of diagrams) {
  try {
    const parsed = await mermaid.parse(text);
    results.push({ name, ok: true, type: parsed.diagramType });
  } catch (err) {
    failed += 1;
    const message = String((err && err.message) || err);
    results.push({ name, ok: false, error: message });
    process.stderr.write(`${name}: ${message}\n`);
  }
}
process.stdout.write(JSON.stringify(results));
process.exit(failed ? 1 : 0);
