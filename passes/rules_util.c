/* rules_util: not written yet. */
#include "ks_rules.h"
