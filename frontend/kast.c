/* kast: not written yet. */
#include "ks_kast.h"
