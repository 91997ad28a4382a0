/* Exports neither sv_verify_draft nor sv_prompt_lookup: the loader must name both. */
#define SV_CUSTOM_VERIFY_DRAFT
#define SV_CUSTOM_PROMPT_LOOKUP
#include "stub.h"
