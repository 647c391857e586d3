// The prefix algebra: parse and canonicalise addresses and CIDRs, aggregate (plain and
// community-aware), cut out bogons, diff tagged lists, longest-prefix-match, and the packed
// tables (PrefixTable) the revision builder works on, and a bigint view of addresses for code
// that does arithmetic on them (ip-value). Explicit and sorted; the internals of the
// algorithms (PrefixList, words, sort) stay private to this folder.

export type { Family } from "./address.js";
export { aggregatePrefixes } from "./aggregate.js";
export type { TaggedColumns, TaggedFamily, TaggedInput, TaggedPrefix } from "./aggregate-tagged.js";
export { aggregateTagged, aggregateTaggedColumns } from "./aggregate-tagged.js";
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
export type { CidrValue, CidrValueParse, IpValue } from "./ip-value.js";
export {
  appendRangeCidrValues,
  bitsOf,
  cidrValueContains,
  formatCidrValue,
  formatIpValue,
  parseCidrValue,
  parseIpValue,
  valueToWords,
  wordsToValue,
} from "./ip-value.js";
export type { PrefixIndex, PrefixTextIndex } from "./prefix-index.js";
export { buildPrefixIndex, buildPrefixTextIndex } from "./prefix-index.js";
export { writePrefixLines } from "./prefix-lines.js";
export type { PrefixTables } from "./prefix-table.js";
export {
  comparePrefixes,
  isSorted,
  lastAddress,
  newTables,
  PrefixTable,
  parseIPv4Into,
  parsePrefixTexts,
  pushPrefixText,
  sortedPairs,
} from "./prefix-table.js";
export { compareWords } from "./words.js";
