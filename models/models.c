/* models/models.c — placeholder until the zoo lands. */
#include "ir/ir.h"
