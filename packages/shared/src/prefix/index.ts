// The prefix algebra: parse and canonicalise addresses and CIDRs, aggregate (plain and
// community-aware), cut out bogons, diff tagged lists, longest-prefix-match, and the packed
// tables (PrefixTable) the revision builder works on, and a bigint view of addresses for code
// that does arithmetic on them (ip-value). Sorted; a module that is public whole (ip-value,
// prefix-table) is re-exported with `export *`, the others name what they give, so the
// internals of the algorithms (words, cidr's fast paths) stay in this folder. PrefixList, its
// parser and its sorts are named for the revision builder, which parses each collected text once
// and hands the parsed lists to the aggregation (aggregateTaggedLists).

export type { Family } from "./address.js";
export { aggregatePrefixes } from "./aggregate.js";
export type { TaggedColumns, TaggedFamily, TaggedInput, TaggedLists, TaggedPrefix } from "./aggregate-tagged.js";
export { aggregateTagged, aggregateTaggedColumns, aggregateTaggedLists } from "./aggregate-tagged.js";
export {
  DEFAULT_EXCLUDE_PREFIXES,
  DEFAULT_MIN_PREFIX_LENGTH_V4,
  DEFAULT_MIN_PREFIX_LENGTH_V6,
} from "./bogons.js";
export type { Address, ParseCidrOptions, ParsedCidr, Prefix } from "./cidr.js";
export {
  canonicalCidr,
  containsAddress,
  containsPrefix,
  familyOf,
  formatAddress,
  formatPrefix,
  NOT_CANONICAL,
  parseAddress,
  parseCidr,
  parsePrefixInto,
  rangeToCidrs,
  scanIPv4Prefix,
  scanIPv6Prefix,
} from "./cidr.js";
export { compareCommunities, sortCommunities } from "./communities.js";
export type { CommunityChange, TaggedDiff } from "./diff-tagged.js";
export { diffTagged } from "./diff-tagged.js";
export type { PrefixErrorCode } from "./errors.js";
export { PrefixError } from "./errors.js";
export type { BogonFilterOptions, FilterResult, MinPrefixLengths } from "./exclude.js";
export { excludeRanges, filterMinLength, removeBogons } from "./exclude.js";
export * from "./ip-value.js";
export type { PrefixIndex, PrefixTextIndex } from "./prefix-index.js";
export { buildPrefixIndex, buildPrefixTableIndex, buildPrefixTextIndex } from "./prefix-index.js";
export { writePrefixLines } from "./prefix-lines.js";
export type { ParsedPrefixes } from "./prefix-list.js";
export { PrefixList, parsePrefixList } from "./prefix-list.js";
export * from "./prefix-table.js";
export { mergedOrder, sortedDistinct } from "./sort.js";
export { compareWords } from "./words.js";
