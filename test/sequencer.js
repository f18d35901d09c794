// The order Jest runs spec files in: the slow ones of test/tiers.js first, in
// their listed order, then Jest's own order (failed first, then by the durations
// it cached, else by file size). On a fresh clone Jest has no durations, and its
// file-size order would start a 50-second multi-process spec last, alone.
const Sequencer = require('@jest/test-sequencer').default;
const { join, relative, sep } = require('node:path');
const { SLOW } = require('./tiers');

const ROOT = join(__dirname, '..');

class SlowFirst extends Sequencer {
  async sort(tests) {
    const ordered = await super.sort(tests);
    const rank = (test) => {
      const at = SLOW.indexOf(relative(ROOT, test.path).split(sep).join('/'));
      return at === -1 ? SLOW.length : at;
    };
    // Array.prototype.sort is stable: the rest keep Jest's order.
    return [...ordered].sort((a, b) => rank(a) - rank(b));
  }
}

module.exports = SlowFirst;
