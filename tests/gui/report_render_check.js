// Injected at the end of a report's <body> by report_render_test.sh, run by headless Chromium, which then dumps the
// DOM: what a reader would see wrong, measured on the laid-out page, one line per problem in the pre element "render-check".
// UNITS (set before this script): chart title (its prefix) → strings its axis or colour-bar text must show
// ("a|b": either).
(function () {
  const problems = [];
  const vw = document.documentElement.clientWidth;
  const scrolls = (e) => {
    for (; e && e !== document.body; e = e.parentElement)
      if (['auto', 'scroll'].includes(getComputedStyle(e).overflowX)) return true;
    return false;
  };
  // Nothing wider than the viewport: the page does not scroll sideways and no element reaches past its right edge.
  if (document.documentElement.scrollWidth > vw)
    problems.push(`page scrolls sideways: ${document.documentElement.scrollWidth} px wide in a ${vw} px viewport`);
  for (const e of document.body.querySelectorAll('*')) {
    if (e.closest('svg') && e.tagName.toLowerCase() !== 'svg') continue;  // SVG content is checked below
    if (scrolls(e.parentElement)) continue;  // inside a box that scrolls sideways on its own (a wide table)
    const r = e.getBoundingClientRect();
    if (r.width > 0 && r.right > vw + 0.5)
      problems.push(`wider than the viewport: <${e.tagName.toLowerCase()}> ends at ${Math.round(r.right)} px of ${vw}` +
                    ` (${(e.textContent || '').trim().slice(0, 60)})`);
  }
  // Numbers as people read them: sizes in B/KiB/MiB, not raw byte counts; no scientific notation.
  const text = document.body.innerText;
  for (const m of text.matchAll(/\b\d{5,} ?(B|bytes)\b/g)) problems.push(`raw byte count: "${m[0]}"`);
  for (const m of text.matchAll(/\d(\.\d+)?e[+-]\d+/gi)) problems.push(`scientific notation: "${m[0]}"`);
  // Every chart: a legend (or colour bar), ticks on its axes, the units it plots, no label over another or cut off.
  const charts = document.querySelectorAll('svg');
  if (charts.length === 0) problems.push('no chart on the page');
  for (const svg of charts) {
    const title = (svg.querySelector('title') || {}).textContent || '(untitled)';
    const box = svg.getBoundingClientRect();
    if (box.width < 100 || box.height < 60) problems.push(`${title}: drawn ${box.width}×${box.height} px`);
    if (!svg.querySelector('.legend text, .colour-bar text')) problems.push(`${title}: no legend or colour bar`);
    if (svg.querySelectorAll('.ticks text').length < 2) problems.push(`${title}: fewer than 2 axis ticks`);
    const key = Object.keys(UNITS).find((k) => title.startsWith(k));
    const labels = [...svg.querySelectorAll('text')].filter((t) => !t.closest('.legend'));
    const shown = labels.map((t) => t.textContent).join(' | ');
    if (key === undefined) problems.push(`${title}: a chart the test does not know (add its units to UNITS)`);
    // An entry "a|b" is met by either: a duration axis is humanised (µs for a quiet run, ms for a late rank).
    else for (const unit of UNITS[key]) if (!unit.split("|").some((u) => shown.includes(u))) problems.push(`${title}: no "${unit}" on its axes (${shown.slice(0, 120)})`);
    const rects = [...svg.querySelectorAll('text')].map((t) => [t, t.getBoundingClientRect()]).filter(([, r]) => r.width > 0);
    for (const [t, r] of rects)
      if (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5)
        problems.push(`${title}: label "${t.textContent}" cut off at the chart's edge`);
    for (let i = 0; i < rects.length; ++i)
      for (let j = i + 1; j < rects.length; ++j) {
        const [a, ra] = rects[i], [b, rb] = rects[j];
        const dx = Math.min(ra.right, rb.right) - Math.max(ra.left, rb.left);
        const dy = Math.min(ra.bottom, rb.bottom) - Math.max(ra.top, rb.top);
        if (dx > 1 && dy > 2) problems.push(`${title}: label "${a.textContent}" over "${b.textContent}"`);
      }
  }
  for (const e of window.__renderErrors || []) problems.push(`console: ${e}`);
  const out = document.createElement('pre');
  out.id = 'render-check';
  out.textContent = `charts ${charts.length}\n` + problems.join('\n');
  document.body.appendChild(out);
})();
