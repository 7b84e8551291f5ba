import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { renderTemplate, TemplateError, type RenderLimits } from '../../src/templates/render.ts';

function refusal(content: string, data: unknown = {}, limits: Partial<RenderLimits> = {}): TemplateError {
  try {
    renderTemplate({ content_type: 'jst', content, name: 'evil' }, data, limits);
  } catch (err) {
    assert.ok(err instanceof TemplateError, `expected a TemplateError, got ${String(err)}`);
    return err;
  }
  assert.fail(`expected ${JSON.stringify(content)} to be refused`);
}

const data = { name: 'Ada', list: [1, 2], user: { name: 'Ada' }, n: 5 };

describe('jst evaluator refusals', () => {
  it('refuses constructor, __proto__ and prototype on any value', () => {
    for (const expr of ['name.constructor', 'list.constructor', 'user.constructor', 'user["constructor"]', 'list.__proto__',
      'user.__proto__', 'name.prototype', '(x => x).constructor', 'Math.constructor', 'user[`__proto__`]']) {
      const err = refusal('${' + expr + '}', data);
      assert.equal(err.kind, 'evaluation', expr);
      assert.match(err.message, /property "(constructor|__proto__|prototype)" is not accessible in templates/, expr);
    }
    assert.equal(refusal('${constructor}', data).kind, 'evaluation');
    assert.equal(refusal('${name.constructor("return process")()}', data).kind, 'evaluation');
    assert.equal(refusal('${name["constructor"]["constructor"]("return 1")()}', data).kind, 'evaluation');
    assert.match(refusal('${JSON.stringify({ __proto__: 1 })}', data).message, /"__proto__" is not accessible/);
  });

  it('refuses inherited, non-own properties', () => {
    const err = refusal('${user.toString}', data);
    assert.equal(err.kind, 'evaluation');
    assert.match(err.message, /property "toString" is not an own data property/);
    assert.match(refusal('${list.map}', data).message, /not an own data property \(call it: \.map\(…\)\)/);
    assert.match(refusal('${user.hasOwnProperty("name")}', data).message, /method "hasOwnProperty" is not allowed on an object/);
    assert.match(refusal('${name.foo}', data).message, /strings have no property "foo"/);
  });

  it('refuses this', () => {
    const err = refusal('${this}', data);
    assert.equal(err.kind, 'evaluation');
    assert.match(err.message, /"this" is not available in templates/);
    assert.equal(refusal('${this.name}', data).kind, 'evaluation');
  });

  it('refuses methods that are not allowed, saying which', () => {
    const err = refusal('${list.sort()}', data);
    assert.equal(err.kind, 'evaluation');
    assert.match(err.message, /^template "evil": method "sort" is not allowed on arrays; allowed: map, filter/);
    assert.match(refusal('${name.localeCompare("b")}', data).message, /method "localeCompare" is not allowed on strings/);
    assert.match(refusal('${name.match("a")}', data).message, /method "match" is not allowed on strings/);
    assert.match(refusal('${n.toPrecision(2)}', data).message, /method "toPrecision" is not allowed on numbers/);
    assert.match(refusal('${list.push(3)}', data).message, /method "push" is not allowed on arrays/);
    assert.match(refusal('${Math.random()}', data).message, /Math\.random is not allowed; allowed: Math\.round, Math\.floor/);
    assert.match(refusal('${JSON.parse("{}")}', data).message, /JSON\.parse is not allowed; allowed: JSON\.stringify \(/);
    assert.match(refusal('${Object.assign(user, {})}', data).message, /Object\.assign is not allowed/);
  });

  it('refuses non-string patterns and callbacks where strings are expected', () => {
    assert.match(refusal('${name.replace(list, "x")}', data).message, /replace: argument 1 must be a string, not an array/);
    assert.match(refusal('${name.replace("A", x => x)}', data).message, /replace: argument 2 must be a string, not a function/);
    assert.match(refusal('${name.split(user)}', data).message, /split: argument 1 must be a string/);
    assert.match(refusal('${JSON.stringify(user, x => x)}', data).message, /a replacer is not supported/);
  });

  it('has no access to host globals', () => {
    for (const name of ['globalThis', 'process', 'require', 'Function', 'eval', 'module', 'Reflect', 'Proxy', 'setTimeout', 'fetch', 'Date']) {
      const err = refusal('${' + name + '}', data);
      assert.equal(err.kind, 'missing_data', name);
      assert.equal(err.path, name);
      assert.match(err.message, new RegExp(`data has no "${name}" \\(JavaScript globals are not available in templates`), name);
    }
    const err = refusal('${process.env.HOME}', data);
    assert.equal(err.path, 'process.env.HOME');
    assert.match(refusal('${require("fs")}', data).message, /data has no "require"/);
    assert.match(refusal('${Function("return process")()}', data).message, /data has no "Function"/);
    assert.match(refusal('${globalThis.process}', data).message, /data has no "globalThis.process"/);
  });

  it('gives data keys that shadow global names the data value, never the global', () => {
    assert.equal(renderTemplate({ content_type: 'jst', content: '${process} ${Math}' }, { process: 'p', Math: 'm' }), 'p m');
  });

  it('refuses functions stored in data and rendering a function', () => {
    assert.match(refusal('${f()}', { f: () => 'called' }).message, /f is a function from the data; templates cannot call those/);
    assert.match(refusal('${s()}', { s: 'text' }).message, /s is not a function \(it is a string\)/);
    assert.match(refusal('${x => x}', data).message, /a function cannot be rendered as text/);
    assert.match(refusal('${(x => x).params}', data).message, /functions have no readable properties/);
    assert.match(refusal('${Object.keys(x => x)}', data).message, /Object\.keys needs an object or array, not a function/);
  });

  it('runs no getters found in data', () => {
    let ran = false;
    const withGetter = Object.defineProperty({}, 'secret', { get: () => { ran = true; return 's'; }, enumerable: true });
    assert.match(refusal('${o.secret}', { o: withGetter }).message, /property "secret" is not a plain data property/);
    assert.equal(ran, false);
  });

  it('refuses implicit conversion of objects in arithmetic and comparison', () => {
    assert.match(refusal('${user * 2}', data).message, /operator \* needs a string, number or boolean, not an object/);
    assert.match(refusal('${list < 3}', data).message, /operator < needs a string, number or boolean, not an array/);
    assert.match(refusal('${-user}', data).message, /unary - needs a string, number or boolean/);
  });

  it('stops at the step limit', () => {
    const err = refusal("${'x'.repeat(2000).split('').map(a => 'x'.repeat(2000).split('').map(b => a + b).join('')).join('').length}");
    assert.equal(err.kind, 'evaluation');
    assert.match(err.message, /too much work \(more than 1000000 evaluation steps\)/);
    const small = refusal('${list.map(x => x + 1).map(x => x + 1)}', { list: Array.from({ length: 50 }, (_, i) => i) }, { maxSteps: 100 });
    assert.match(small.message, /more than 100 evaluation steps/);
  });

  it('stops unbounded recursion', () => {
    const err = refusal('${(f => f(f))(f => f(f))}');
    assert.equal(err.kind, 'evaluation');
    assert.match(err.message, /functions are nested more than 100 calls deep/);
  });

  it('refuses output past the limit before building it', () => {
    const repeat = refusal("${'x'.repeat(1e9)}");
    assert.equal(repeat.kind, 'evaluation');
    assert.match(repeat.message, /repeat\(1000000000\) would exceed the output limit of 1048576 characters/);
    assert.match(refusal("${'x'.padEnd(1e10)}").message, /padEnd\(10000000000\) would exceed the output limit/);
    assert.match(refusal("${[1,2,3,4,5,6].map(i => 'x'.repeat(1000000)).join('')}").message, /output limit of 1048576 characters/);
    assert.match(refusal("${JSON.stringify([1,2,3,4,5,6].map(i => 'x'.repeat(1000000)))}").message, /output limit/);
    assert.match(refusal("${'a'.repeat(100000).replaceAll('', '$`')}").message, /output limit/);
    const concat = refusal('${s}${s}${s}', { s: 'y'.repeat(400_000) });
    assert.match(concat.message, /output limit of 1048576 characters/);
  });

  it('honours a lower output limit', () => {
    assert.match(refusal('${s + s}', { s: 'abc' }, { maxOutput: 5 }).message, /output limit of 5 characters/);
  });

  it('turns native argument errors into evaluation errors', () => {
    const err = refusal('${n.toFixed(500)}', data);
    assert.equal(err.kind, 'evaluation');
    assert.match(err.message, /n\.toFixed\(\) failed: toFixed\(\) digits argument must be between 0 and 100/);
    assert.match(refusal("${'x'.repeat(-1)}").message, /failed: Invalid count value/);
  });
});
