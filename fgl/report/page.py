"""The report's HTML page: one file, everything inline — styles, pictures
(SVG) and a few lines of script — with no address outside the file, so it
opens anywhere, offline, and reads the same with scripts off."""
from __future__ import annotations

from html import escape

CSS = """
body{font-family:"DejaVu Sans",Helvetica,Arial,sans-serif;margin:0;color:#1d1d1d;
background:#f6f6f4;line-height:1.45;font-size:15px}
header{background:#22313f;color:#fff;padding:18px 32px}
header h1{margin:0 0 4px;font-size:24px}header p{margin:0;color:#d5dde5}
nav{position:sticky;top:0;background:#fff;border-bottom:1px solid #ddd;padding:6px 32px;
z-index:2}nav a{margin-right:16px;color:#22313f;text-decoration:none;font-weight:bold}
main{padding:8px 32px 40px;max-width:1400px}
section.part{background:#fff;border:1px solid #e2e2e2;border-radius:6px;padding:8px 20px 16px;
margin:18px 0}
h2{border-bottom:2px solid #22313f;padding-bottom:4px}h3{margin:20px 0 4px}
.note{color:#555;font-size:13px}.file{font-family:monospace;color:#555}
pre.explain{background:#f3f5f7;padding:10px;border-radius:4px;white-space:pre-wrap}
table.spec{border-collapse:collapse;font-family:"DejaVu Sans Mono",monospace;font-size:13px;
width:100%;background:#fbfbfb}
table.spec td{padding:0 8px;vertical-align:top;white-space:pre-wrap}
td.ln{color:#999;text-align:right;user-select:none;border-right:1px solid #ddd;width:3em}
.kw{color:#0b5394;font-weight:bold}.comment{color:#6a737d;font-style:italic}
.string{color:#a31515}.number{color:#098658}.define{color:#7b1fa2;font-weight:bold}
table.facts th{text-align:left;padding-right:14px;color:#444;font-weight:normal}
table.facts td{font-weight:bold}
table.scores{border-collapse:collapse;margin:6px 0 12px}
table.scores td,table.scores th{padding:2px 10px;text-align:right;border-bottom:1px solid #eee}
table.scores td:first-child,table.scores th:first-child{text-align:left}
table.scores tr.total td{border-top:2px solid #999;font-weight:bold}
.charts{display:flex;flex-wrap:wrap;gap:12px}
.cards{display:flex;flex-wrap:wrap;gap:10px}
.card{border:1px solid #ddd;border-radius:4px;padding:4px 8px;min-width:250px;max-width:360px}
.card h4{margin:2px 0 4px}table.weights{font-size:12px;border-collapse:collapse;width:100%}
table.weights td{padding:0 4px}td.w{text-align:right;font-family:monospace;white-space:nowrap}
td.attr{font-family:monospace;word-break:break-all}td.sub{color:#777;font-style:italic}
.bar{display:inline-block;height:8px;min-width:1px}.bar.pos{background:#d6604d}
.bar.neg{background:#4393c3}td.pos{color:#b2182b}td.neg{color:#2166ac}
.tokens{display:flex;flex-wrap:wrap;gap:3px 2px;margin:6px 0}
.tok{display:inline-flex;flex-direction:column;align-items:center;padding:1px 4px;
border-radius:3px;border:2px solid transparent}
.tok .word{font-size:14px}.tok .ptag{font-size:10px;color:#333}
.tok.wrong{border-color:#d62728}.goldtag{font-size:10px;color:#d62728;font-weight:bold}
section.instance{border-top:1px solid #ddd;padding-top:4px}
.scroll{overflow-x:auto}.key{font-size:12px}.kind{font-style:italic;margin-left:8px}
.swatch{display:inline-block;width:10px;height:10px;margin:0 3px 0 6px}
.chooser{margin:8px 0}.chooser select{max-width:70%}.js-only{display:none}
body.js .js-only{display:block}
body.js #instances.one section.instance{display:none}
body.js #instances.one section.instance.shown{display:block}
p.layer{margin:4px 0 0;font-style:italic}
footer{color:#777;font-size:12px;padding:0 32px 20px}
"""

SCRIPT = """
document.body.classList.add('js');
(function(){
  var box=document.getElementById('instances'),sel=document.getElementById('chooser'),
      all=document.getElementById('show-all');
  if(!box||!sel){return;}
  function show(){
    box.classList.toggle('one',!all.checked);
    var cards=box.querySelectorAll('section.instance');
    for(var i=0;i<cards.length;i++){cards[i].classList.toggle('shown',cards[i].id===sel.value);}
  }
  sel.addEventListener('change',show);all.addEventListener('change',show);
  var buttons=document.querySelectorAll('.chooser button');
  for(var i=0;i<buttons.length;i++){buttons[i].addEventListener('click',function(){
    var k=sel.selectedIndex+parseInt(this.getAttribute('data-step'),10);
    if(k>=0&&k<sel.options.length){sel.selectedIndex=k;show();}});}
  show();
})();
"""


def section(anchor: str, title: str, body: str) -> str:
    return (f'<section class="part" id="{anchor}"><h2>{escape(title)}</h2>\n{body}\n'
            "</section>")


def document(title: str, subtitle: str, parts: list[tuple[str, str, str]], footer: str) -> str:
    """The whole page: a header, a bar of links to the ``parts`` (anchor,
    title, body) and the parts."""
    nav = "".join(f'<a href="#{a}">{escape(t)}</a>' for a, t, _ in parts)
    body = "\n".join(section(a, t, b) for a, t, b in parts)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(title)}</title>"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<style>{CSS}</style></head>\n<body>\n<header><h1>{escape(title)}</h1>"
            f"<p>{escape(subtitle)}</p></header>\n<nav>{nav}</nav>\n<main>\n{body}\n</main>\n"
            f"<footer>{escape(footer)}</footer>\n<script>{SCRIPT}</script>\n</body></html>\n")
