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

/* A clone keeps its arrays in one block; replacing or growing any of them (and freeing the op) leaves the original
 * as it was, under the sanitizers too. */
static void test_op_block(void)
{
    ir_tid ins[3] = {0, 1, 2}, keeps[2] = {4, 5};
    int32_t covers[2] = {0, 1};
    struct ir_op op = ir_op_prim(IR_KIND_ELEMENTWISE, ins, 2, 3);
    CHECK(op.block != NULL && (op.packed & IR_PACK_INS) && (op.packed & IR_PACK_ACCESS));
    ir_op_set_keeps(&op, keeps, 2);
    ir_op_set_covers(&op, covers, 2);
    struct ir_op c = ir_op_clone(&op);
    CHECK(c.packed == (IR_PACK_INS | IR_PACK_ACCESS | IR_PACK_KEEPS | IR_PACK_COVERS));
    CHECK(ir_op_equal(&op, &c) && c.ins != op.ins && c.keeps[1] == 5 && c.covers[1] == 1);
    ir_op_append_in(&c, 2);
    CHECK(c.nins == 3 && c.ins[2] == 2 && !c.access[2].strided && !(c.packed & IR_PACK_INS));
    CHECK(c.ins[0] == 0 && c.ins[1] == 1 && c.keeps[0] == 4);
    ir_op_set_covers(&c, covers, 1);
    CHECK(c.ncovers == 1 && !(c.packed & IR_PACK_COVERS) && (c.packed & IR_PACK_KEEPS));
    ir_op_set_ins(&c, ins, NULL, 3);
    CHECK(c.nins == 3 && c.ins[2] == 2);
    CHECK(op.nins == 2 && op.ins[1] == 1 && op.nkeeps == 2 && op.ncovers == 2);
    struct ir_op e = ir_op_prim(IR_KIND_SILU, NULL, 0, 0);
    struct ir_op ec = ir_op_clone(&e);
    CHECK(ec.nins == 0 && ec.ins == NULL && ec.access != NULL && ec.keeps == NULL && ec.covers == NULL);
    ir_op_free(&ec);
    ir_op_free(&e);
    ir_op_free(&c);
    CHECK(c.block == NULL && c.packed == 0);
    ir_op_free(&op);
}

/* Two graphs are the same program when their tensors and ops are equal, whatever the graphs' own names. */
static void test_same_program(void)
{
    struct ir_graph *g = ir_graph_new();
    ir_tensor_add(g, "x", IR_ELEM_F32, 1, 8, IR_ROLE_INPUT);
    ir_tensor_add(g, "y", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION);
    ir_tid x = 0;
    struct ir_op op = ir_op_prim(IR_KIND_SILU, &x, 1, 1);
    op.spec.u.unary.n = 8;
    ir_graph_push(g, op);
    struct ir_graph *c = ir_graph_clone(g);
    CHECK(ir_graph_same_program(g, c));
    c->tensors[1].observed = true;
    CHECK(!ir_graph_same_program(g, c));
    c->tensors[1].observed = false;
    c->ops[0].spec.u.unary.n = 4;
    CHECK(!ir_graph_same_program(g, c));
    ir_graph_free(c);
    c = ir_graph_clone(g);
    ir_tensor_add(c, "z", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION);
    CHECK(!ir_graph_same_program(g, c));
    ir_graph_free(c);
    ir_graph_free(g);
}

int main(void)
{
    test_tables();
    test_construction();
    test_state_inputs();
    test_op_block();
    test_same_program();
    return check_done("ir");
}
