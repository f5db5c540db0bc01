// Whether a file mentions a name, read from its bytes: the project index's importer search asks this of
// every .py file in a folder and the folders above it, once per (file, name), and decoding each file to a
// string for a regex cost more than the search (issue #12: about a tenth of a one-shot lint of diffusers'
// src/). The answer is the one `/\bname\b/.test(bytes.toString('utf8'))` gives.

/** ASCII letters, digits and `_`: what `\b` (without the `u` flag) counts as a word character. */
function isWordByte(b: number): boolean {
  return (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || b === 0x5f;
}

/**
 * True when the UTF-8 `bytes` contain `word` (ASCII word characters only) with no word character on
 * either side. Equivalent to the regex on the decoded text: an ASCII byte always decodes to the same
 * character (never part of a multi-byte sequence), and every byte >= 0x80 (or the U+FFFD an invalid one
 * decodes to) is a non-word character on both sides.
 */
export function bytesContainWord(bytes: Buffer, word: string): boolean {
  const end = bytes.length - word.length;
  for (let at = bytes.indexOf(word, 0, 'latin1'); at >= 0 && at <= end; at = bytes.indexOf(word, at + 1, 'latin1')) {
    if (at > 0 && isWordByte(bytes[at - 1])) continue;
    if (at < end && isWordByte(bytes[at + word.length])) continue;
    return true;
  }
  return false;
}
