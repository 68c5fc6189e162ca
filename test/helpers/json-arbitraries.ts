import fc from 'fast-check';

// Generators of JSON texts as sources send them: numbers in every form Python's json reads (big integers, floats
// with no fraction, exponents, NaN and the infinities), strings with any UTF-16 unit (lone surrogates included),
// repeated and awkward keys, random whitespace, and, sometimes, a defect that makes the text invalid.

const digits = (min: number, max: number) =>
  fc.array(fc.constantFrom(...'0123456789'), { minLength: min, maxLength: max }).map((d) => d.join(''));

/** A number token as the JSON grammar allows it, biased towards the forms a double cannot carry. */
export const numberToken = (): fc.Arbitrary<string> =>
  fc.oneof(
    fc.integer().map(String),
    fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }).map(String),
    fc.constantFrom('9007199254740993', '-9007199254740993', '9007199254740992', '-0', '0'),
    fc
      .tuple(
        fc.boolean(),
        fc.oneof(
          fc.constant('0'),
          digits(1, 20).map((d) => d.replace(/^0+(?=\d)/, '')),
        ),
        fc.option(digits(1, 20), { nil: undefined }),
        fc.option(fc.tuple(fc.constantFrom('e', 'E'), fc.constantFrom('', '+', '-'), digits(1, 3)), {
          nil: undefined,
        }),
      )
      .map(([neg, int, frac, exp]) => `${neg ? '-' : ''}${int}${frac ? `.${frac}` : ''}${exp ? exp.join('') : ''}`),
    fc.double().map((n) => (Number.isFinite(n) ? String(n) : n > 0 ? 'Infinity' : n < 0 ? '-Infinity' : 'NaN')),
    fc.constantFrom('1.0', '1E5', '1e400', '-1e400', '-0.0', 'NaN', 'Infinity', '-Infinity', '1e16', '1e22'),
  );

/** Any string of UTF-16 units, lone surrogates included. */
export const anyString = (): fc.Arbitrary<string> =>
  fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)), maxLength: 12 });

/** A string token: escaped as JSON.stringify escapes, or with every non-ASCII unit as \uXXXX (Python's form). */
const stringToken = (s: fc.Arbitrary<string>): fc.Arbitrary<string> =>
  fc
    .tuple(s, fc.boolean())
    .map(([text, ascii]) =>
      ascii
        ? JSON.stringify(text).replace(/[^ -~]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
        : JSON.stringify(text),
    );

/**
 * Keys: a few names repeat often (so objects get repeated keys), some are awkward, some integer-like (JavaScript lists
 * those first).
 */
const keyToken = (): fc.Arbitrary<string> =>
  stringToken(
    fc.oneof(
      fc.constantFrom('a', 'b', 'id', '__proto__', 'constructor', 'x y', 'é', '0', '3', '10', '007', '4294967295'),
      anyString(),
    ),
  );

const space = fc.constantFrom('', '', ' ', '\n', '\t', '\r\n ');

export const jsonValueText = (): fc.Arbitrary<string> =>
  fc.letrec<{ value: string }>((tie) => ({
    value: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      numberToken(),
      stringToken(anyString()),
      fc.constantFrom('null', 'true', 'false'),
      fc
        .tuple(fc.array(fc.tuple(space, tie('value'), space), { maxLength: 5 }), space)
        .map(([items, sp]) => `[${items.length === 0 ? sp : items.map((i) => i.join('')).join(',')}]`),
      fc
        .tuple(fc.array(fc.tuple(space, keyToken(), space, tie('value')), { maxLength: 5 }), space)
        .map(
          ([entries, sp]) =>
            `{${entries.length === 0 ? sp : entries.map(([a, k, b, v]) => `${a}${k}${b}:${v}`).join(',')}}`,
        ),
    ),
  })).value;

/** A JSON text, valid most of the time; sometimes cut short or given a stray character. */
export const jsonTextArbitrary = (): fc.Arbitrary<string> =>
  fc.oneof(
    { arbitrary: jsonValueText(), weight: 8 },
    {
      arbitrary: fc
        .tuple(jsonValueText(), fc.nat(), fc.constantFrom('', ',', '}', ']', '"', '\\', '\u0001', 'x', '.'))
        .map(([text, at, junk]) => text.slice(0, at % (text.length + 1)) + junk),
      weight: 2,
    },
  );
