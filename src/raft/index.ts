export { RaftNode, type ProposeOutcome, type RaftInitialState } from './node.js';
export { InvariantError } from './invariant.js';
export { RAFT_DEFAULTS, type RaftConfig } from './config.js';
export type { Ready, ReadState, SoftState, Role, ForwardResult } from './ready.js';
export * from './types.js';
