// The Review page's span marker (dashboard/span_marks.py): the answer drawn inert, a selection
// reported as code point offsets (Array.from splits a string into code points, as Python counts).
export default function ({ data, parentElement, setStateValue }) {
  const root = parentElement.querySelector(".answer");
  const chars = Array.from(data.answer);
  const cuts = new Set([0, chars.length]);
  for (const s of [...data.flagged, ...data.human]) { cuts.add(s.start); cuts.add(s.end); }
  const points = [...cuts].filter((c) => c >= 0 && c <= chars.length).sort((a, b) => a - b);
  root.textContent = "";
  for (let i = 0; i + 1 < points.length; i++) {
    const [a, b] = [points[i], points[i + 1]];
    const inside = (s) => s.start <= a && b <= s.end;
    const piece = chars.slice(a, b).join("");
    let node = document.createElement(data.flagged.some(inside) ? "mark" : "span");
    const human = data.human.filter(inside);
    if (human.some((s) => s.kind === "unsupported")) node.className = "human";
    else if (human.length) node.className = "benign";
    node.dataset.start = String(a);
    node.textContent = piece;
    root.appendChild(node);
  }
  const offset = (container, units) => {
    // the code point offset of (container, UTF-16 units) inside root
    const el = container.nodeType === 3 ? container.parentElement : container;
    if (!root.contains(el)) return null;
    if (el === root) return units === 0 ? 0 : chars.length;
    return Number(el.dataset.start) + Array.from(container.textContent.slice(0, units)).length;
  };
  const report = () => {
    const sel = root.ownerDocument.getSelection();
    if (!sel || sel.rangeCount === 0 || sel.isCollapsed) return;
    const range = sel.getRangeAt(0);
    const start = offset(range.startContainer, range.startOffset);
    const end = offset(range.endContainer, range.endOffset);
    if (start === null || end === null || end <= start) return;
    setStateValue("selection", { start, end, nonce: Date.now() });
  };
  root.onmouseup = report;
  root.onkeyup = report;
}
