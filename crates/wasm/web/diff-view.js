// The node diff / drift report (issue 5). This file is the seam between the page and the diff:
// the worker calls the wasm export `diff(nodes_json)` (input: JSON array of {name, text}; output:
// the JSON of `rulelint diff --format json`) when the module has it, and the page calls
// `renderDiff` with the parsed document whenever two or more dumps were analysed.
//
// Until the diff lands, `doc` is null (this build's module has no `diff` export) or a document
// this file does not know yet, shown pretty-printed.

/**
 * Renders the diff report into `container` (emptied first).
 * @param {HTMLElement} container the `data-testid="diff-report"` section
 * @param {object|null} doc the parsed `rulelint diff --format json` document, or null when the
 *   wasm module has no `diff` export
 */
export function renderDiff(container, doc) {
  container.replaceChildren();
  const title = document.createElement('h2');
  title.textContent = 'Node diff';
  container.append(title);
  const note = document.createElement('p');
  note.className = 'hint';
  if (doc === null) {
    note.textContent = 'This build of the analyser has no node diff yet: each dump was checked on its own.';
    container.append(note);
    return;
  }
  const pre = document.createElement('pre');
  pre.className = 'json';
  pre.textContent = JSON.stringify(doc, null, 2);
  container.append(pre);
}
