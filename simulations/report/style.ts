/** The page's inline stylesheet and script: the report fetches nothing. */
import { SVG_WIDTH_PX } from './svg.js';


export const STYLE = `
:root{--bg:#f4f5f7;--card:#fff;--ink:#0f172a;--muted:#64748b;--rule:#e2e8f0;--ok:#16a34a;--bad:#dc2626;--leader:#2563eb;--amber:#f59e0b;--violet:#8b5cf6;--never:#334155;--expired:#9f1239;--cut:#f97316;--clock:#0891b2}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue","Liberation Sans",Arial,sans-serif}
main{max-width:${SVG_WIDTH_PX + 80}px;margin:0 auto;padding:20px 16px 40px}
.card{background:var(--card);border:1px solid var(--rule);border-radius:10px;padding:16px 20px;margin-bottom:16px;box-shadow:0 1px 2px rgba(15,23,42,.05)}
h1{margin:0;font-size:26px;letter-spacing:-.01em}
h2{margin:0 0 10px;font-size:16px}
.eyebrow{color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.08em}
.title-row{display:flex;align-items:center;justify-content:space-between;gap:16px}
.verdict{font-size:20px;font-weight:700;padding:6px 18px;border-radius:999px;text-decoration:none}
.verdict.ok{background:#dcfce7;color:#166534;border:1px solid #86efac}
.verdict.bad{background:#fee2e2;color:#b91c1c;border:1px solid #fca5a5}
.facts{display:flex;flex-wrap:wrap;gap:8px 28px;margin:14px 0 12px}
.facts div{min-width:90px}
.facts dt{color:var(--muted);font-size:11px;text-transform:uppercase;letter-spacing:.06em}
.facts dd{margin:0;font-weight:600;font-variant-numeric:tabular-nums}
.muted{color:var(--muted);font-weight:400}
.warn{color:#b45309;font-weight:600}
.repro{display:flex;align-items:center;gap:10px;background:#0f172a;border-radius:8px;padding:6px 8px 6px 14px}
.repro-label{color:#94a3b8;font-size:11px;text-transform:uppercase;letter-spacing:.08em;white-space:nowrap}
.repro pre{flex:1;margin:0;overflow-x:auto}
.repro code{color:#e2e8f0;font:13px/1.6 ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace;user-select:all}
.repro button{background:#334155;color:#f8fafc;border:0;border-radius:6px;padding:5px 12px;font:inherit;font-size:12px;cursor:pointer}
.repro button:hover{background:#475569}
.legend{display:flex;flex-wrap:wrap;align-items:center;gap:6px 14px;font-size:12px;color:#334155;margin-bottom:8px}
.lg-group{font-weight:700;color:var(--muted);text-transform:uppercase;font-size:10.5px;letter-spacing:.06em;margin-left:8px}
.lg-group:first-child{margin-left:0}
.lg{display:inline-flex;align-items:center;gap:5px;white-space:nowrap}
.sw{display:inline-block;width:16px;height:10px;border-radius:2px}
.sw-leader{background:var(--leader)}
.sw-down{background:repeating-linear-gradient(45deg,#9ca3af 0 2px,#e5e7eb 2px 5px)}
.sw-pause{background:repeating-linear-gradient(-45deg,#0f172a 0 1.5px,rgba(30,41,59,.35) 1.5px 4px)}
.sw-cut{background:var(--cut)}
.sw-clock{background:linear-gradient(#fff 0 45%,var(--clock) 45% 60%,#cffafe 60%)}
.sw-ok{background:var(--ok)}.sw-failed{background:var(--bad)}.sw-aborted{background:var(--amber)}.sw-never{background:var(--never)}.sw-skipped{background:var(--violet)}.sw-expired{background:var(--expired)}
.sw-missed{background:repeating-linear-gradient(45deg,var(--violet) 0 2px,#ede9fe 2px 5px)}
.sw-reassign{width:3px;height:12px;background:#475569}
.sw-late{background:linear-gradient(90deg,#94a3b8,#f59e0b,#dc2626)}
.sw-early{background:#0ea5e9}
.sw-violation{width:0;height:0;border-radius:0;border-left:6px solid transparent;border-right:6px solid transparent;border-top:10px solid var(--bad)}
.sw-healed{width:3px;height:14px;background:var(--ok)}
.scroll{overflow-x:auto}
svg.timeline{display:block;font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Liberation Sans",Arial,sans-serif}
svg text{fill:var(--ink)}
.axis-line{stroke:#94a3b8;stroke-width:1}
.axis-label{font-size:11px;fill:#475569;text-anchor:middle;font-variant-numeric:tabular-nums}
.axis-title{font-size:10.5px;fill:var(--muted);text-anchor:end}
.grid{stroke:#e2e8f0;stroke-width:1}
.section-title{font-size:13px;font-weight:700;letter-spacing:.06em;fill:#334155}
.section-sub{font-size:11.5px;font-weight:400;letter-spacing:0;fill:var(--muted)}
.section-rule{stroke:#cbd5e1;stroke-width:1}
.lane-name{font-size:13px;font-weight:700}
.lane-spec{font:10.5px ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace;fill:#475569}
.lane-fact{font-size:10.5px;fill:var(--muted)}
.lane-fact.bad{fill:var(--bad)}
.row-label{font-size:9.5px;fill:#94a3b8}
.row-label.small{font-size:8px}
.end{text-anchor:end}
.role-bg{fill:#eef2f7}
.net-bg{fill:#f8fafc}
.leader{fill:var(--leader)}
.leader.merged{fill:#93c5fd}
.leader-label{font-size:10.5px;font-weight:700;fill:#fff;text-anchor:middle;pointer-events:none}
.pause{fill:url(#hatch-pause)}
.down{fill:url(#hatch-down);fill-opacity:.92}
.crash-edge{fill:#475569;pointer-events:none}
.down-label{font-size:10px;font-weight:700;fill:#475569;text-anchor:middle;pointer-events:none}
.cut{fill:var(--cut)}
.cut-1{fill-opacity:.45}.cut-2{fill-opacity:.7}.cut-3{fill-opacity:1}
.clock-zero{stroke:#cbd5e1;stroke-width:1;stroke-dasharray:2 2}
.clock{fill:#cffafe;fill-opacity:.8;stroke:var(--clock);stroke-width:1.3;stroke-linejoin:round}
.hit{fill:transparent}
.hit:hover{fill:rgba(15,23,42,.08)}
.healed-tint{fill:#16a34a;fill-opacity:.045}
.healed-line{stroke:var(--ok);stroke-width:2;stroke-dasharray:6 3}
.healed-label{font-size:11.5px;font-weight:700;fill:#15803d}
.violation-line{stroke:var(--bad);stroke-width:1;stroke-opacity:.55}
.violation-marker{fill:var(--bad);cursor:help}
.violation-count{font-size:11px;font-weight:700;fill:var(--bad)}
.slot-bg{fill:#f1f5f9}
.run-bg{fill:#fafbfc}.run-bg.alt{fill:#f3f5f8}
.late-bg{fill:#fcfcfd}
.late-zero{stroke:#cbd5e1;stroke-width:1}
.r-succeeded,.o-succeeded{fill:var(--ok)}
.r-failed,.o-failed{fill:var(--bad)}
.r-aborted,.o-aborted,.o-interrupted{fill:var(--amber)}
.r-never{fill:var(--never)}
.r-skipped{fill:var(--violet)}
.r-missed{fill:var(--expired)}
.r-pending{fill:#cbd5e1}
.reassign{stroke:#475569;stroke-width:1.2;fill:none}
.late-1{fill:#94a3b8}.late-2{fill:var(--amber)}.late-3{fill:var(--bad)}
.late.early{fill:#0ea5e9}
.missed{fill:url(#hatch-missed)}
.missed-label{font-size:10px;font-weight:700;fill:#5b21b6;text-anchor:middle;pointer-events:none}
table.jobs{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}
table.jobs th{font-size:11px;text-transform:uppercase;letter-spacing:.05em;color:var(--muted);text-align:left;border-bottom:1px solid var(--rule);padding:6px 8px}
table.jobs th.blank{border-bottom:0}
table.jobs th.group{text-align:center;text-transform:none;letter-spacing:0;font-size:12px}
table.jobs td{padding:7px 8px;border-bottom:1px solid #f1f5f9;vertical-align:middle}
table.jobs tr:hover td{background:#f8fafc}
.num{text-align:right}
td.zero{color:#cbd5e1}
td.bad{color:var(--bad);font-weight:600}
td.job-name{font-weight:700;word-break:break-all}
td.spec code{font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace;color:#475569}
td.hist{width:120px}
.histogram{display:block}
.hist-hit{fill:#f1f5f9}
.h-early{fill:#0ea5e9}.h-0{fill:#16a34a}.h-1{fill:#65a30d}.h-2{fill:#f59e0b}.h-3{fill:#ea580c}.h-4{fill:#dc2626}
.hist-labels{display:flex;justify-content:space-between;width:111px;font-size:9.5px;color:var(--muted)}
.note{color:var(--muted);font-size:12px;margin:8px 0 0}
.bad-card{border-color:#fca5a5;box-shadow:0 0 0 3px #fee2e2}
.bad-card h2{color:#b91c1c}
ol.violations{margin:0;padding-left:22px}
ol.violations li{padding:6px 0;border-bottom:1px solid #fee2e2;font:13px/1.5 ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace;white-space:pre-wrap;word-break:break-word}
.none{color:#166534;margin:0}
#tip{position:fixed;z-index:10;max-width:520px;background:#0f172a;color:#f8fafc;font:12px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace;padding:7px 10px;border-radius:6px;white-space:pre-wrap;pointer-events:none;box-shadow:0 6px 18px rgba(15,23,42,.3)}
[data-tip]{cursor:default}
`;

/** Tooltips from `data-tip` (set as text, never as HTML) and the copy button. */
export const SCRIPT = `
(() => {
  const tip = document.getElementById('tip');
  document.addEventListener('mouseover', (e) => {
    const el = e.target instanceof Element ? e.target.closest('[data-tip]') : null;
    if (!el) { tip.hidden = true; return; }
    tip.textContent = el.getAttribute('data-tip');
    tip.hidden = false;
  });
  document.addEventListener('mousemove', (e) => {
    if (tip.hidden) return;
    let x = e.clientX + 14, y = e.clientY + 16;
    if (x + tip.offsetWidth > innerWidth - 8) x = e.clientX - tip.offsetWidth - 14;
    if (y + tip.offsetHeight > innerHeight - 8) y = e.clientY - tip.offsetHeight - 12;
    tip.style.left = x + 'px';
    tip.style.top = y + 'px';
  });
  const select = (el) => { const r = document.createRange(); r.selectNodeContents(el); const s = getSelection(); s.removeAllRanges(); s.addRange(r); };
  for (const button of document.querySelectorAll('button[data-copy]')) {
    button.addEventListener('click', () => {
      const el = document.getElementById(button.dataset.copy);
      const done = () => { button.textContent = 'Copied'; setTimeout(() => { button.textContent = 'Copy'; }, 1500); };
      if (navigator.clipboard) navigator.clipboard.writeText(el.textContent).then(done, () => select(el));
      else select(el);
    });
  }
})();
`;

