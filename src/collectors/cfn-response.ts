import { SaxesParser } from 'saxes';
import { SourceUnavailableError } from '../errors.js';
import { isJsonObject, type JsonObject } from '../util/json-merge.js';

// heat-api-cfn's DescribeStackResource answer, read with saxes: a strict XML 1.0 parser that refuses anything not
// well-formed, including a reference to an entity XML does not predefine. A DOCTYPE is refused outright (nothing of a
// document type is expanded), and so is nesting deeper than any real answer; the HTTP client caps the size.
// Loaded only when an answer arrives, so a daemon without the cfn source never parses it.

export interface XmlElement {
  readonly name: string;
  readonly children: XmlElement[];
  /** Concatenated character data directly inside the element. */
  text: string;
}

const MAX_XML_DEPTH = 64;

/** The document's root element; throws an Error naming what is wrong and where. */
export function parseXml(xml: string): XmlElement {
  const parser = new SaxesParser({ xmlns: false, position: true });
  const open: XmlElement[] = [];
  let root: XmlElement | undefined;
  parser.on('doctype', () => parser.fail('DOCTYPE and declarations are not accepted'));
  parser.on('opentag', (tag) => {
    if (open.length >= MAX_XML_DEPTH) parser.fail('elements nested too deeply');
    const el: XmlElement = { name: tag.name, children: [], text: '' };
    open.at(-1)?.children.push(el);
    root ??= el;
    open.push(el);
  });
  parser.on('closetag', () => open.pop());
  const addText = (text: string) => {
    const current = open.at(-1);
    if (current) current.text += text;
  };
  parser.on('text', addText);
  parser.on('cdata', addText);
  // Without an error handler saxes throws at the first error, which stops the parse there.
  parser.write(xml).close();
  if (!root) throw new Error('no root element');
  return root;
}

function child(el: XmlElement | undefined, name: string): XmlElement | undefined {
  // Element names are matched without any namespace prefix, as upstream's un-namespaced find() effectively did.
  return el?.children.find((c) => c.name === name || c.name.endsWith(`:${name}`));
}

function invalid(message: string): SourceUnavailableError {
  return new SourceUnavailableError('cfn', message, { code: 'ERR_SOURCE_INVALID_DATA' });
}

/** DescribeStackResourceResult/StackResourceDetail/<field> text, parsed as JSON, descended by keys; must be an object. */
export function extractMetadata(
  xml: string,
  p: { spec: string; field: string; keys: readonly string[] },
  shown: string,
): JsonObject {
  let root: XmlElement;
  try {
    root = parseXml(xml);
  } catch (err) {
    throw invalid(`heat-api-cfn at ${shown} returned malformed XML (${(err as Error).message})`);
  }
  const fieldEl = child(child(child(root, 'DescribeStackResourceResult'), 'StackResourceDetail'), p.field);
  if (!fieldEl) throw invalid(`path ${p.spec} does not exist in the response from ${shown}`);
  let value: unknown;
  try {
    value = JSON.parse(fieldEl.text);
  } catch {
    throw invalid(`${p.field} of ${p.spec} is not valid JSON`);
  }
  for (const key of p.keys) {
    if (!isJsonObject(value) || !Object.hasOwn(value, key))
      throw invalid(`path ${p.spec} does not exist: no key "${key}"`);
    value = value[key];
  }
  if (!isJsonObject(value)) throw invalid(`${p.spec} is not a JSON object`);
  return value;
}
