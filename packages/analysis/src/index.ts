/** @heapcap/analysis — what a heap snapshot holds: streaming summary, retained sizes, diffs, leak hunts; where sampled allocations were made. */
export { createSummarizer, type Summarizer } from './summarizer.ts';
export { SummarySchema, ClassRowSchema, SUMMARY_SCHEMA_VERSION, type Summary, type ClassRow, type SummaryOptions } from './summary-schema.ts';
export { SnapshotScanner, invalidSnapshot, type ScanHandler, type ScanTotals, type NumberSection } from './scanner.ts';
export { typeGroup, nameClass } from './class-name.ts';
export { analyzeSnapshotFile, analyzeGraph, loadSnapshotGraph, type AnalyzeOptions } from './analyze.ts';
export { AnalysisSchema, AnalysisClassSchema, DominatorSchema, PathStepSchema, ANALYSIS_SCHEMA_VERSION, type Analysis, type AnalysisClass, type DominatorEntry } from './analysis-schema.ts';
export { formatPath, shortPath, type PathStep } from './paths.ts';
export { snapshotFileInfo, type SnapshotFileInfo } from './source.ts';
export { diffSummaries, topGrowth, SummaryDiffSchema, ClassDeltaSchema, GrowthEntrySchema, DIFF_SCHEMA_VERSION, type SummaryDiff, type ClassDelta, type GrowthEntry, type DiffOptions, NO_ANALYSIS_NOTE } from './diff.ts';
export { leakHunt, LeakHuntSchema, LeakClassSchema, LEAK_HUNT_SCHEMA_VERSION, NO_DRIVE_NOTE, type LeakHunt, type LeakClass, type LeakHuntOptions } from './leak-hunt.ts';
export { SummaryWritable, SummaryTee, summarizeFile, type SummaryOutcome } from './summary-stream.ts';
export { createGraphLoader, type GraphLoader, type HeapGraph } from './graph.ts';
export { suspectGroups, classKind, SuspectSchema, SuspectsSchema, SuspectPartSchema, ContainerSchema, NOTHING_GREW, type Suspect, type Suspects, type SuspectPart, type Container } from './suspects.ts';
export { graphSuspects, summarySuspects, describeHolder, describeContainer, formatBytes, smallLine, SUSPECTS, type GraphSuspectOptions } from './suspect-report.ts';
export { significant, SIGNIFICANCE_RULE, type Evidence } from './significance.ts';
export { SuspectGroupSchema, HolderSchema, type SuspectGroup, type Holder, type SuspectKind } from './analysis-schema.ts';
export { SnapshotRedactor, createRedactor, REDACTED_MARKER, type RedactMode, type RedactionReport } from './redact.ts';
export { elementNameWithoutValues } from './element-name.ts';
export { summarizeProfile, formatFrame, type ProfileSummaryOptions } from './profile/profile-summary.ts';
export { diffProfiles, type ProfileDiffOptions } from './profile/profile-diff.ts';
export { constructorSites, nameSuspectSites, MIN_SAMPLES } from './profile/suspect-sites.ts';
export { checkSamplingProfile, isFoldedFrame, objectsOfSample, attributeSamples, type SamplingHeapProfile, type ProfileNode, type ProfileCallFrame, type ProfileSample, type AttributedProfile } from './profile/profile-tree.ts';
export {
  ProfileSummarySchema,
  ProfileDiffSchema,
  AllocationSiteSchema,
  ProfileFrameSchema,
  ProfileStackSchema,
  SiteDeltaSchema,
  PROFILE_SUMMARY_SCHEMA_VERSION,
  type ProfileSummary,
  type ProfileDiff,
  type AllocationSite,
  type ProfileFrame,
  type ProfileStack,
  type SiteDelta,
} from './profile/profile-schema.ts';
export { profileToPprof, type PprofOptions } from './profile/pprof.ts';
export { profileTree, profileTreeDiff } from './profile/profile-folded-tree.ts';
export { ProfileTreeSchema, ProfileTreeDiffSchema, type ProfileTree, type ProfileTreeDiff, type ProfileTreeNode, type ProfileTreeDiffNode } from './profile/profile-tree-schema.ts';
export { AllocatedAtSchema, AllocationStackSchema, allocatedAtLine, suspectAllocatedAt, foldStack, MAX_STACKS, type AllocatedAt, type AllocationStack } from './allocation-site.ts';
export type { AllocationTrace } from './allocation-trace.ts';
export { readNodeIds, type NodeIdSet } from './node-ids.ts';
