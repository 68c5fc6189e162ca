import { SourceUnavailableError } from '../errors.js';
import { isJsonObject, type JsonObject } from '../util/json-merge.js';

// A message Heat posted to the Zaqar queue, as either API returns it ({body, ...}): its body is the whole server
// metadata, so anything but a JSON object is bad data.

export function messageBody(message: unknown): JsonObject {
  const body = isJsonObject(message) ? message.body : undefined;
  if (!isJsonObject(body))
    throw new SourceUnavailableError('zaqar', 'the Zaqar message body is not a JSON object', {
      code: 'ERR_SOURCE_INVALID_DATA',
    });
  return body;
}
