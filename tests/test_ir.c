/* tests/test_ir.c — graph construction, the tables, deep copies and spec field tables. */
#include "check.h"
#include "ir/ir.h"

#include <stdlib.h>

/* Every table row has a name that looks itself up. */
static void test_tables(void)
{
    for (int k = 0; k < IR_KIND_COUNT; k++) {
        const char *n = ir_kind_name((enum ir_kind)k);
        CHECKF(ir_kind_lookup(n, strlen(n)) == k, "kind %s", n);
        int count;
        CHECKF(ir_spec_fields((enum ir_kind)k, &count) != NULL && count > 0, "kind %s has fields", n);
    }
    CHECK(IR_CLASS_COUNT == 86);
    for (int c = 0; c < IR_CLASS_COUNT; c++) {
        const char *n = ir_class_name((enum ir_class)c);
        CHECKF(ir_class_lookup(n, strlen(n)) == c, "class %s", n);
    }
    CHECK(ir_format_block_values(IR_FMT_Q4_K) == 256);
    CHECK(ir_format_block_bytes(IR_FMT_Q6_K) == 210);
    CHECK(ir_format_lookup("q8_0", 4) == IR_FMT_Q8_0);
    CHECK(ir_elem_lookup("bf16", 4) == IR_ELEM_BF16);
    CHECK(ir_role_lookup("state", 5) == IR_ROLE_STATE);
    CHECK(ir_kind_lookup("nope", 4) == -1);
}

/* Tensors are interned by name; ops push with default covers; clones are equal and independent. */
static void test_construction(void)
{
    struct ir_graph *g = ir_graph_new();
    char name[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof name, "t%d", i);
        CHECK(ir_tensor_add(g, name, IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION) == i);
    }
    CHECK(ir_tensor_add(g, "t7", IR_ELEM_F32, 1, 8, IR_ROLE_INPUT) == IR_NONE);
    CHECK(ir_tensor_find(g, "t999", 4) == 999);
    CHECK(ir_tensor_find(g, "t1000", 5) == IR_NONE);
    ir_tid ins[2] = {0, 1};
    struct ir_op op = ir_op_prim(IR_KIND_ELEMENTWISE, ins, 2, 2);
    op.spec.u.elementwise.op = IR_EW_ADD;
    op.spec.u.elementwise.n = 8;
    CHECK(ir_graph_push(g, op) == 0);
    CHECK(g->ops[0].ncovers == 1 && g->ops[0].covers[0] == 0);
    CHECK(ir_spec_out_len(&g->ops[0].spec) == 8);
    struct ir_graph *c = ir_graph_clone(g);
    CHECK(c->ntensors == 1000 && c->nops == 1);
    CHECK(ir_op_equal(&g->ops[0], &c->ops[0]));
    c->ops[0].spec.u.elementwise.n = 9;
    CHECK(!ir_op_equal(&g->ops[0], &c->ops[0]));
    CHECK(ir_tensor_find(c, "t500", 4) == 500);
    ir_graph_free(c);
    ir_graph_free(g);
}

/* State inputs are the tensors written in place. */
static void test_state_inputs(void)
{
    ir_tid ins[3] = {0, 1, 2};
    struct ir_op op = ir_op_prim(IR_KIND_SET_ROW, ins, 3, 0);
    int idx[4];
    CHECK(ir_op_state_inputs(&op, idx) == 1 && idx[0] == 0);
    ir_op_free(&op);
    op = ir_op_prim(IR_KIND_CAUSAL_CONV, ins, 3, 0);
    CHECK(ir_op_state_inputs(&op, idx) == 1 && idx[0] == 2);
    ir_op_free(&op);
    op = ir_op_prim(IR_KIND_SILU, ins, 1, 1);
    CHECK(ir_op_state_inputs(&op, idx) == 0);
    ir_op_free(&op);
}

int main(void)
{
    test_tables();
    test_construction();
    test_state_inputs();
    return check_done("ir");
}
