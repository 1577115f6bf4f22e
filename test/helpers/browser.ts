/** Debian's chromium, which the browser tests drive through playwright-core: never a downloaded browser. */
export const CHROMIUM = '/usr/bin/chromium';
