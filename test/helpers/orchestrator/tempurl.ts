import { createHmac } from 'node:crypto';

// Swift TempURL: temp_url_sig = hex HMAC-SHA1(key, "METHOD\nexpires\npath"), valid until temp_url_expires.
export function tempUrlSignature(key: string, method: string, expires: number, path: string): string {
  return createHmac('sha1', key).update(`${method}\n${expires}\n${path}`).digest('hex');
}

export function tempUrl(base: string, key: string, method: string, path: string, expires: number): string {
  return `${base}${path}?temp_url_sig=${tempUrlSignature(key, method, expires, path)}&temp_url_expires=${expires}`;
}
