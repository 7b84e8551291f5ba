import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { renderTemplate, TemplateError, validateTemplateSyntax } from '../../src/templates/render.ts';

const jst = (content: string, name = 'x') => ({ content_type: 'jst' as const, content, name });
const render = (content: string, data: unknown = {}) => renderTemplate(jst(content), data);

function failure(content: string, data: unknown = {}): TemplateError {
  try {
    render(content, data);
  } catch (err) {
    assert.ok(err instanceof TemplateError, `expected a TemplateError, got ${String(err)}`);
    return err;
  }
  assert.fail(`expected ${JSON.stringify(content)} to fail`);
}

describe('jst rendering', () => {
  it('renders the example from the brief', () => {
    const data = { name: 'Ada', items: [{ title: 'tea' }, { title: 'cake' }] };
    assert.equal(render('Hello ${name}! You have ${items.length} items: ${items.map(i => i.title).join(\', \')}', data),
      'Hello Ada! You have 2 items: tea, cake');
  });

  it('evaluates literals, arithmetic, comparison, logic and conditionals', () => {
    const data = { a: 7, b: 2, s: 'x', none: null, zero: 0 };
    assert.equal(render('${a + b} ${a - b} ${a * b} ${a / b} ${a % b} ${b ** 3} ${-a} ${+"3"} ${!a}', data), '9 5 14 3.5 1 8 -7 3 false');
    assert.equal(render('${a > b} ${a < b} ${a >= 7} ${b <= 1} ${s === "x"} ${s !== "x"} ${zero == 0} ${a != 7}', data), 'true false true false true false true false');
    assert.equal(render('${none ?? "dflt"} ${zero ?? 5} ${zero || 5} ${a && b} ${a > 5 ? "big" : "small"}', data), 'dflt 0 5 2 big');
    assert.equal(render('${"a" + 1 + null} ${true} ${null} ${1.5e3} ${\'single\'}'), 'a1null true null 1500 single');
  });

  it('evaluates typeof, including on a name that is not in the data', () => {
    assert.equal(render('${typeof n} ${typeof s} ${typeof missing} ${typeof (x => x)} ${typeof o}', { n: 1, s: 's', o: {} }), 'number string undefined function object');
  });

  it('reads arrays, indexes, strings and computed members', () => {
    const data = { list: ['a', 'b', 'c'], word: 'hello', o: { 'two words': 2, k: 'v' }, key: 'k' };
    assert.equal(render('${list[0]}${list[2]} ${list.length} ${word.length} ${word[1]} ${o["two words"]} ${o[key]} ${list[5] ?? "none"}', data),
      'ac 3 5 e 2 v none');
  });

  it('supports optional chaining', () => {
    const data = { user: { address: null }, list: null };
    assert.equal(render('${user.address?.city ?? "?"} ${user?.address?.city.name ?? "deep"} ${list?.[0] ?? "-"} ${absent?.x ?? "gone"} ${list?.map(x => x) ?? "n"}', data),
      '? deep - gone n');
  });

  it('supports arrow functions with map, filter, find, some, every, reduce and closures over outer parameters', () => {
    const data = { nums: [1, 2, 3, 4], people: [{ n: 'a', age: 30 }, { n: 'b', age: 12 }] };
    assert.equal(render('${nums.map(n => n * 2).join("-")}', data), '2-4-6-8');
    assert.equal(render('${nums.filter(n => n % 2 === 0)}', data), '2,4');
    assert.equal(render('${people.find(p => p.age < 18).n} ${people.findIndex(p => p.n === "b")}', data), 'b 1');
    assert.equal(render('${nums.some(n => n > 3)} ${nums.every(n => n > 3)}', data), 'true false');
    assert.equal(render('${nums.reduce((sum, n) => sum + n, 0)} ${nums.reduce((a, b) => a * b)}', data), '10 24');
    assert.equal(render('${nums.map((n, i) => nums.map(m => n * m)[i]).join()}', data), '1,4,9,16');
    assert.equal(render('${people.map(p => `${p.n}:${p.age}`).join("; ")}', data), 'a:30; b:12');
    assert.equal(render('${((a, b) => a + b)(2, 3)} ${(() => "none")()}'), '5 none');
  });

  it('supports the allowed string methods', () => {
    const data = { s: '  Hello World  ', t: 'a-b-c' };
    assert.equal(render('[${s.trim()}][${s.trimStart()}][${s.trimEnd()}]', data), '[Hello World][Hello World  ][  Hello World]');
    assert.equal(render('${t.toUpperCase()} ${t.split("-").join("+")} ${t.split("-", 2)} ${t.slice(1, 3)} ${t.substring(2)}', data), 'A-B-C a+b+c a,b -b b-c');
    assert.equal(render('${t.replace("-", "/")} ${t.replaceAll("-", "/")} ${t.replaceAll("-", "[$&]")} ${t.replace("b", "$`$\'")}', data),
      'a/b-c a/b/c a[-]b[-]c a-a--c-c');
    assert.equal(render('${t.includes("b")} ${t.startsWith("a")} ${t.endsWith("x")} ${t.indexOf("c")} ${t.at(-1)} ${t.charAt(0)}', data), 'true true false 4 c a');
    assert.equal(render('${"7".padStart(3, "0")} ${"7".padEnd(3, ".")} ${"ab".repeat(3)} ${"a".concat("b", 1)} ${"AbC".toLowerCase()}'), '007 7.. ababab ab1 abc');
  });

  it('supports the allowed array and number methods', () => {
    const data = { a: [3, 1, 2], nested: [[1, [2]], [3]], n: 3.14159 };
    assert.equal(render('${a.slice(1)} ${a.includes(2)} ${a.indexOf(2)} ${nested.flat()} ${nested.flat(2).length} ${a.concat([9], 8)} ${a.at(-1)}', data),
      '1,2 true 2 1,2,3 3 3,1,2,9,8 2');
    assert.equal(render('${n.toFixed(2)} ${(255).toString(16)} ${n.toString()}', data), '3.14 ff 3.14159');
  });

  it('supports the allowed globals', () => {
    const data = { o: { b: 2, a: 1 }, v: 2.5, list: [1] };
    assert.equal(render('${JSON.stringify(o)} ${Math.round(v)} ${Math.floor(v)} ${Math.ceil(v)} ${Math.min(3, 1)} ${Math.max(3, 1)} ${Math.abs(-2)}', data),
      '{"b":2,"a":1} 3 2 3 1 3 2');
    assert.equal(render('${String(5) + 1} ${Number("4") + 1} ${Boolean("")} ${Array.isArray(list)} ${Object.keys(o)} ${Object.values(o)} ${Object.entries(o)[0]}', data),
      '51 5 false true b,a 2,1 b,2');
    assert.equal(render('${JSON.stringify(o, null, 1)}', data), '{\n "b": 2,\n "a": 1\n}');
  });

  it('builds object and array literals and nested template literals', () => {
    assert.equal(render('${JSON.stringify({ a: 1, "b": [1, 2], [k]: k, k })}', { k: 'key' }), '{"a":1,"b":[1,2],"key":"key","k":"key"}');
    assert.equal(render('${`outer ${`inner ${1 + 1}`}`}'), 'outer inner 2');
  });

  it('renders objects and arrays of objects as JSON, arrays of primitives like JavaScript', () => {
    const data = { user: { name: 'Ada' }, rows: [{ a: 1 }], tags: ['x', 'y'], mixed: [1, null, 'z'] };
    assert.equal(render('${user}', data), '{\n  "name": "Ada"\n}');
    assert.equal(render('${rows}', data), '[\n  {\n    "a": 1\n  }\n]');
    assert.equal(render('${tags} ${mixed} ${"pre:" + tags}', data), 'x,y 1,,z pre:x,y');
  });
});

describe('jst escapes and splitting', () => {
  it('keeps \\${ literal and cooks \\` and other escapes like JavaScript', () => {
    assert.equal(render('cost: \\${price} for ${n}', { n: 2 }), 'cost: ${price} for 2');
    assert.equal(render('a \\`quoted\\` word'), 'a `quoted` word');
    assert.equal(render('line1\\nline2\\ttab \\\\ \\x41\\u0042\\u{43} \\$ \\{'), 'line1\nline2\ttab \\ ABC $ {');
    assert.equal(render('joined \\\nline'), 'joined line');
  });

  it('keeps a bare backtick as text, so Markdown fences work', () => {
    assert.equal(render('```json\n${v}\n```', { v: 1 }), '```json\n1\n```');
  });

  it('finds the end of an expression despite braces and backticks in strings', () => {
    assert.equal(render('${"}"} ${\'{\'} ${"`"} ${"a\\"}"} ${ {a: {b: "}"}}.a.b } ${`x}${"}"}`} end'), '} { ` a"} } x}} end');
  });

  it('treats $ without a brace and a lone } as text', () => {
    assert.equal(render('$5 and } and $ {x}'), '$5 and } and $ {x}');
  });
});

describe('jst missing data', () => {
  it('names an unknown identifier', () => {
    const err = failure('Hi ${name}');
    assert.equal(err.kind, 'missing_data');
    assert.equal(err.path, 'name');
    assert.equal(err.message, 'template "x": data has no "name" (used at line 1, column 4)');
  });

  it('names the full path when reading a member of undefined or null', () => {
    const err = failure('line\n  ${user.address.city}', { user: {} });
    assert.equal(err.kind, 'missing_data');
    assert.equal(err.path, 'user.address.city');
    assert.equal(err.message, 'template "x": data has no "user.address.city": "user.address" is undefined (used at line 2, column 3)');
    assert.deepEqual(err.position, { line: 2, column: 3 });
    assert.equal(failure('${user.address.city}', { user: { address: null } }).message,
      'template "x": data has no "user.address.city": "user.address" is null (used at line 1, column 1)');
    assert.equal(failure('${user.name}').path, 'user.name');
    const call = failure('${user.name.toUpperCase()}', { user: {} });
    assert.equal(call.path, 'user.name');
    assert.match(call.message, /data has no "user\.name": cannot call user\.name\.toUpperCase\(\) on undefined/);
    assert.equal(failure('${user.name.toUpperCase()}').message, 'template "x": data has no "user.name": "user" is not defined (used at line 1, column 1)');
  });

  it('names a missing value inside a callback', () => {
    const err = failure('${items.map(i => i.meta.title)}', { items: [{ meta: { title: 'a' } }, {}] });
    assert.equal(err.kind, 'missing_data');
    assert.equal(err.path, 'i.meta.title');
  });

  it('refuses to render undefined as the text "undefined"', () => {
    const err = failure('${user.nickname}', { user: {} });
    assert.equal(err.kind, 'missing_data');
    assert.equal(err.path, 'user.nickname');
    assert.equal(render('${user.nickname ?? "friend"} ${user.nickname ? "has" : "has not"}', { user: {} }), 'friend has not');
  });
});

describe('jst syntax errors', () => {
  const syntax = (content: string): TemplateError => {
    try {
      validateTemplateSyntax(jst(content));
    } catch (err) {
      assert.ok(err instanceof TemplateError);
      assert.equal(err.kind, 'syntax');
      return err;
    }
    assert.fail(`expected a syntax error for ${JSON.stringify(content)}`);
  };

  it('reports a parse error at its line and column', () => {
    const err = syntax('Hello\nab ${a +* b}');
    assert.equal(err.message, 'template "x": syntax error at line 2, column 9: Expected expression after +');
    assert.deepEqual(err.position, { line: 2, column: 9 });
    assert.equal(syntax('${a = 1}').message, 'template "x": syntax error at line 1, column 5: Unexpected "="');
  });

  it('reports unclosed expressions, strings and nested templates', () => {
    assert.equal(syntax('ok\n  ${name').message, 'template "x": syntax error at line 2, column 3: "${" is never closed: add the matching "}"');
    assert.match(syntax('${"abc}').message, /line 1, column 3: unterminated string literal/);
    assert.match(syntax('${`abc}').message, /unterminated nested template literal/);
  });

  it('reports empty expressions, several expressions and unsupported constructs', () => {
    assert.match(syntax('a ${ } b').message, /column 3: empty \$\{\} expression/);
    assert.match(syntax('${a b}').message, /expected one expression/);
    assert.match(syntax('${tag`x`}').message, /tagged template literals are not supported/);
    assert.match(syntax('${({a}) => a}').message, /arrow function parameters must be plain names/);
  });

  it('reports bad escapes in the text', () => {
    assert.match(syntax('C:\\xfiles').message, /line 1, column 3: invalid escape sequence/);
    assert.match(syntax('\\1').message, /octal escapes are not allowed/);
    assert.match(syntax('end \\').message, /lone backslash/);
  });
});
