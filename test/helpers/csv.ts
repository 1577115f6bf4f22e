/**
 * Reads CSV as RFC 4180 writes it: rows ended by CRLF, fields split by
 * commas, a quoted field holding commas, CR, LF and doubled quotes. Throws
 * on anything else, so a test reading a body also checks its syntax.
 */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let i = 0;
  while (i < text.length) {
    let field = '';
    if (text[i] === '"') {
      for (i++; ; i++) {
        if (i >= text.length) throw new Error('a quoted field is not closed');
        if (text[i] !== '"') field += text[i];
        else if (text[i + 1] === '"') field += text[i++];
        else break;
      }
      i++;
    } else {
      while (i < text.length && !',\r\n"'.includes(text[i])) field += text[i++];
    }
    row.push(field);
    if (text[i] === ',') i++;
    else if (text.startsWith('\r\n', i)) {
      rows.push(row);
      row = [];
      i += 2;
    } else throw new Error(`at byte ${i}: ${JSON.stringify(text.slice(i, i + 10))} where a comma or CRLF belongs`);
  }
  if (row.length > 0) throw new Error('the last row has no CRLF');
  return rows;
}
