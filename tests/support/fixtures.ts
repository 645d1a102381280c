/** Valid bodies and field limits of the support endpoints (SPEC "Support", "Limits"). */
export const validBug = () => ({
  summary: "Report export fails",
  user_verbatim: "When I click export the page spins forever.",
  what_happened: "The CSV download never starts.",
  steps_to_reproduce: "1. Open allocation reports\n2. Click export",
  expected_behavior: "A CSV file downloads.",
});

export const validFeature = () => ({
  summary: "Export to Parquet",
  user_verbatim: "We'd love Parquet exports for our lake.",
  problem: "CSV is slow to load into our warehouse.",
  desired_behavior: "Offer format=parquet on reports.",
  business_value: "Saves our data team hours every month.",
});

export const BUG_LIMITS: Record<string, number> = {
  summary: 200,
  user_verbatim: 2000,
  what_happened: 4000,
  steps_to_reproduce: 4000,
  expected_behavior: 4000,
};

export const FEATURE_LIMITS: Record<string, number> = {
  summary: 200,
  user_verbatim: 2000,
  problem: 4000,
  desired_behavior: 4000,
  business_value: 4000,
};

/** An emoji outside the BMP: one code point, two UTF-16 units. */
export const EMOJI = "😀";
/** `e` + COMBINING ACUTE ACCENT: one visible character, two code points. */
export const E_ACUTE = "e\u0301";
