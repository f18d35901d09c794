// The type of test/sequencer.js (plain CommonJS: Jest loads it untranspiled).
import Sequencer from '@jest/test-sequencer';
export default class SlowFirst extends Sequencer {}
