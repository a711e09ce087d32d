/** JSON's structural characters, as char codes and bytes alike (all ASCII). */
export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const OPEN_BRACE = 0x7b;
export const CLOSE_BRACE = 0x7d;
export const OPEN_BRACKET = 0x5b;
export const CLOSE_BRACKET = 0x5d;
export const COMMA = 0x2c;
export const COLON = 0x3a;
export const ZERO = 0x30;
export const NINE = 0x39;

/** JSON's own whitespace: space, tab, line feed, carriage return (not `\s`). */
export function isJsonBlank(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}
