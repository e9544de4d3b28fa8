/** Where a schedule or watch rule is declared: the rules file (HEAPCAP_RULES_FILE) or the API. */
export const RULE_SOURCES = ['file', 'api'] as const;
export type RuleSource = (typeof RULE_SOURCES)[number];

/** The owner name of rules declared in the rules file (shown where a token name would be). */
export const RULES_FILE_OWNER = 'rules-file';
