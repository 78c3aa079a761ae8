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
  const pieceStart = (el) => Number(el.dataset.start);
  const pieceEnd = (el) => pieceStart(el) + Array.from(el.textContent).length;
  const offset = (container, units) => {
    // The code point offset of a range boundary inside root. In a text node `units` counts UTF-16
    // units; in an element it is a child index (the boundary sits before that child).
    if (container.nodeType === 3) {
      const el = container.parentElement;
      if (!root.contains(el) || el === root) return null;
      return pieceStart(el) + Array.from(container.textContent.slice(0, units)).length;
    }
    if (!root.contains(container)) return null;
    if (container === root) {
      const child = root.childNodes[units];
      return child ? pieceStart(child) : chars.length;
    }
    return units < container.childNodes.length ? pieceStart(container) : pieceEnd(container);
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
  // A drag may end outside the answer: listen on the document, once per element, always calling
  // this render's report (its text and its setStateValue).
  root.latestReport = report;
  if (!root.listening) {
    root.listening = true;
    root.ownerDocument.addEventListener("mouseup", () => root.latestReport());
    root.onkeyup = () => root.latestReport();
  }
}
