/* store: not written yet. */
#include "ks_store.h"
