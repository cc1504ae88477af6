#!/usr/bin/env python3
"""The rules the docs show, checked by rulec (tests/docs/run.sh; the
conventions are in docs/testing.md, "Rules in the docs").

    python3 tests/docs/docblocks.py RULEC OUTDIR FILE.md...

Finds every rule in the Markdown files:

  - a ```yaml block holding a rule file (`groups:`), checked as it is;
  - a ```yaml block of rules (`- alert:` items at any indentation),
    wrapped into a file of one group;
  - a ```yaml block of bare rule keys (`expr:` at the left margin, with
    `for:`, `clear:` and the rest after it): each `expr:` and the keys
    after it up to the next `expr:` is a rule of its own, named DocsLINE;
  - a ```yaml block that is a `rulec test` file (`rule_files:` and
    `tests:`): run with `rulec test` beside a copy of rules/, so that
    `../NAME.yaml` names the shipped file, as in rules/tests/;
  - a row of a table with a `today` column whose `today` cell starts with
    "yes": the cell after it must start with the rule's expression in
    backticks, optionally followed by `` , `for: D` ``; checked as a rule
    named after the row's first cell;
  - `shipped: Name` anywhere in a doc (a CamelCase name): a rule in rules/.

`<!-- rulec: expect-error [CODE]... WHY -->` on the last non-blank line
before a block's opening fence: the block must fail (exit 1), with every
[CODE] among the diagnostics; the other words say why.  Every other rule must be clean, warnings
included (--Werror).

Writes one verdict a line on stdout, tab-separated, for run.sh to count:
    pass NAME
    fail NAME DETAILFILE
where NAME starts with the doc's FILE:LINE and rulec's diagnostics in
DETAILFILE point at the doc's lines, not at the generated file's.
"""
import os
import re
import shutil
import subprocess
import sys

FENCE = re.compile(r'^(\s*)(`{3,}|~{3,})\s*([\w+-]*)')
MARK = re.compile(r'^\s*<!--\s*rulec:\s*expect-error\b(.*?)-->\s*$')
DIAG = re.compile(r'^(.*?):(\d+):(\d+):')


class Case:
    """One generated file and how its lines map back to the doc."""

    def __init__(self, name, doc, text, linemap, expect=None, kind='check'):
        self.name = name          # "docs/rules.md:63 DatabaseSwapping"
        self.doc = doc            # docs/rules.md
        self.text = text          # the generated file
        self.linemap = linemap    # generated line (1-based) -> (doc line, add to its column)
        self.expect = expect      # None: clean; a list of codes: must fail with them
        self.kind = kind          # check | test


def blocks(lines):
    """(first body line index, lang, body lines, marker) for each fenced block."""
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang = m.group(2), m.group(3).lower()
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence[0] * len(fence)):
            j += 1
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        mm = MARK.match(lines[k]) if k >= 0 else None
        marker = re.findall(r'\[([a-z0-9-]+)\]', mm.group(1)) if mm else None   # the codes; the rest says why
        yield i + 1, lang, lines[i + 1:j], marker
        i = j + 1


def indent(s):
    return len(s) - len(s.lstrip(' '))


def wrap(first, body, item_indent, shift, alert=None):
    """A file of one group whose rules are body (doc lines first..), each
    line shifted right by shift columns; the generated file's lines are
    the doc's (blank lines before the wrapper), so only columns move.
    With alert, body is a rule's keys: an `- alert:` item is put before
    them, at item_indent + shift - 2."""
    head = ['groups:', '  - name: docs', '    rules:']
    if alert:
        head.append(' ' * (item_indent + shift - 2) + '- alert: ' + alert)
    pad = first - 1 - len(head)
    out, linemap = [], {}
    if pad < 0:               # too near the top of the doc to line up: map each line
        pad = 0
    out = [''] * pad + head
    for n, line in enumerate(body):
        out.append((' ' * shift + line) if line.strip() else line)
        linemap[len(out)] = (first + n, -shift)
    return '\n'.join(out) + '\n', linemap


def yaml_cases(doc, lines):
    for start, lang, body, marker in blocks(lines):
        n = 0
        for case in block_cases(doc, start, lang, body, marker):
            n += 1
            yield case
        if marker is not None and not n:
            yield Case(f'{doc}:{start} expect-error marker', doc, None, {}, marker, kind='stray')


def block_cases(doc, start, lang, body, marker):
    """The cases of one fenced block (module docstring)."""
    if lang not in ('yaml', 'yml'):
        return
    first = start + 1                       # the doc line of body[0]
    text = '\n'.join(body)
    tops = [l for l in body if l and not l.startswith((' ', '#'))]
    if any(l.startswith('rule_files:') for l in tops):
        linemap = {first + n: (first + n, 0) for n in range(len(body))}
        yield Case(f'{doc}:{first} rulec test file', doc,
                   '\n' * (first - 1) + text + '\n', linemap, marker, kind='test')
    elif any(l.startswith('groups:') for l in tops):
        linemap = {first + n: (first + n, 0) for n in range(len(body))}
        yield Case(f'{doc}:{first} rule file', doc, '\n' * (first - 1) + text + '\n', linemap, marker)
    elif any(re.match(r'^\s*- alert:', l) for l in body):
        items = [indent(l) for l in body if re.match(r'^\s*- alert:', l)]
        ind = min(items)
        shift = 6 - ind if ind < 4 else 0      # under `    rules:`
        names = re.findall(r'- alert:\s*(\w+)', text)
        t, linemap = wrap(first, body, ind, shift)
        yield Case(f'{doc}:{first} {", ".join(names)}', doc, t, linemap, marker)
    elif any(l.startswith('expr:') for l in tops):
        starts = [n for n, l in enumerate(body) if l.startswith('expr:')]
        for a, n in enumerate(starts):
            end = starts[a + 1] if a + 1 < len(starts) else len(body)
            rule = body[n:end]
            while rule and (not rule[-1].strip() or rule[-1].lstrip().startswith('#')):
                rule.pop()              # the next rule's comment
            t, linemap = wrap(first + n, rule, 0, 8, alert=f'DocsL{first + n}')
            yield Case(f'{doc}:{first + n} expr', doc, t, linemap, marker)


def cells(row):
    """A table row's cells; `\\|` is a | inside a cell (GitHub's rule)."""
    parts, cur, i = [], '', 0
    s = row.strip()
    if s.startswith('|'):
        s = s[1:]
    while i < len(s):
        if s[i] == '\\' and i + 1 < len(s) and s[i + 1] == '|':
            cur += '|'
            i += 2
            continue
        if s[i] == '|':
            parts.append(cur)
            cur = ''
        else:
            cur += s[i]
        i += 1
    if cur.strip():
        parts.append(cur)
    return parts


ROW = re.compile(r'^\s*`([^`]+)`(?:\s*,\s*`for:\s*([^`]+)`)?')


def table_cases(doc, lines):
    """Rows of tables with a `today` column, whose today cell says yes."""
    col = None
    for n, line in enumerate(lines):
        if not line.lstrip().startswith('|'):
            col = None
            continue
        c = [x.strip() for x in cells(line)]
        if col is None:
            if 'today' in c:
                col = c.index('today')
            continue
        if set(''.join(c)) <= set('-: '):
            continue                                    # the |---| line
        if col + 1 >= len(c) or not c[col].startswith('yes'):
            continue
        alert = re.sub(r'\W', '', c[0]) or f'DocsL{n + 1}'
        name = f'{doc}:{n + 1} {alert}'
        how = cells(line)[col + 1]
        m = ROW.match(how)
        if not m:
            yield name, None, 'its today cell says yes, so its next cell must start with the expression in backticks'
            continue
        expr, dur = m.group(1), m.group(2)
        if '...' in expr or '…' in expr:
            yield name, None, f'`{expr}` is not a whole expression (it has "..."): a row that says yes shows one'
            continue
        # the expression's column in the doc line: its offset in the raw line
        raw = line.replace('\\|', '|')
        ecol = raw.find('`' + expr + '`') + 1          # 0-based column of the expression
        safe = re.match(r'^[\w(]', expr) and ': ' not in expr and ' #' not in expr
        prefix = '        expr: '
        if safe:
            eline = prefix + expr
            shift = ecol - len(prefix)
        else:
            eline = prefix + '"' + expr.replace('\\', '\\\\').replace('"', '\\"') + '"'
            shift = ecol - len(prefix) - 1
        out = ['groups:', '  - name: docs', '    rules:', f'      - alert: {alert}', eline]
        if dur:
            out.append(f'        for: {dur}')
        linemap = {k: (n + 1, shift if k == 5 else 0) for k in range(1, len(out) + 1)}
        yield name, Case(name, doc, '\n'.join(out) + '\n', linemap), None


def shipped_check(doc, lines, rules_dir):
    """`shipped: NAME` in a doc names a rule in rules/ (None: the doc has none)."""
    names = set()
    for fn in os.listdir(rules_dir):
        if fn.endswith(('.yaml', '.yml')):
            with open(os.path.join(rules_dir, fn)) as f:
                names |= set(re.findall(r'^\s*- alert:\s*(\w+)', f.read(), re.M))
    refs = [(n + 1, m) for n, line in enumerate(lines) for m in re.findall(r'\bshipped: ([A-Z][a-z0-9]\w*)', line)]
    if not refs:
        return None
    bad = [f'{doc}:{n}: {m} is no rule in rules/' for n, m in refs if m not in names]
    return f'{doc}: every rule named after "shipped:" ({len(refs)}) is in rules/', '\n'.join(bad)


def remap(out, path, case):
    """rulec's FILE:LINE:COL for the generated file -> the doc's."""
    res = []
    for line in out.splitlines():
        m = DIAG.match(line)
        if m and m.group(1) == path:
            ln, co = int(m.group(2)), int(m.group(3))
            dl, add = case.linemap.get(ln, (ln, 0))
            line = f'{case.doc}:{dl}:{max(1, co + add)}:' + line[m.end():]
        elif path in line:
            line = line.replace(path, case.doc)
        res.append(line)
    return '\n'.join(res)


def run(rulec, outdir, case, seq, rules_copy):
    if case.kind == 'stray':
        return False, 'an expect-error marker before a block that holds no rule (a ```yaml block of rules)'
    if case.kind == 'test':
        path = os.path.join(rules_copy, 'tests', f'docs-{seq}.yaml')
        cmd = [rulec, 'test', path]
    else:
        path = os.path.join(outdir, f'case-{seq}.yaml')
        cmd = [rulec, '--check', '--Werror', '--color=never', '--quiet', path]
    with open(path, 'w') as f:
        f.write(case.text)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = remap(p.stdout, path, case)
    codes = set(re.findall(r'\[([a-z0-9-]+)\]', p.stdout))
    if case.expect is None:
        ok = p.returncode == 0
        why = f'rulec exited {p.returncode}:\n{out}'
    else:
        missing = [c for c in case.expect if c not in codes]
        ok = p.returncode == 1 and not missing
        why = (f'marked expect-error{"".join(" [" + c + "]" for c in case.expect)}, '
               f'but rulec exited {p.returncode}' + (f' without {", ".join(missing)}' if missing else '') +
               f':\n{out}' + (f'\nthe generated file:\n{case.text.lstrip()}' if p.returncode == 0 else ''))
    return ok, why


def main():
    rulec, outdir, docs = sys.argv[1], sys.argv[2], sys.argv[3:]
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    rules_copy = os.path.join(outdir, 'rules')
    shutil.copytree(os.path.join(top, 'rules'), rules_copy)
    seq = 0

    def verdict(name, ok, why):
        nonlocal seq
        label = name
        if ok:
            print(f'pass\t{label}', flush=True)
        else:
            d = os.path.join(outdir, f'detail-{seq}.txt')
            with open(d, 'w') as f:
                f.write(why)
            print(f'fail\t{label}\t{d}', flush=True)

    for doc in docs:
        with open(os.path.join(top, doc)) as f:
            lines = f.read().split('\n')
        for case in yaml_cases(doc, lines):
            seq += 1
            ok, why = run(rulec, outdir, case, seq, rules_copy)
            verdict(case.name + (' (expect-error)' if case.expect is not None and case.kind != 'stray' else ''), ok, why)
        sc = shipped_check(doc, lines, os.path.join(top, 'rules'))
        if sc:
            verdict(sc[0], not sc[1], sc[1])
        for name, case, problem in table_cases(doc, lines):
            seq += 1
            if case is None:
                verdict(name, False, problem)
            else:
                ok, why = run(rulec, outdir, case, seq, rules_copy)
                verdict(name, ok, why)


if __name__ == '__main__':
    main()
