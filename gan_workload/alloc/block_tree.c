/* Free-block pools: treaps keyed by (size, address), like PyTorch's
 * std::set<Block*, BlockComparatorSize> (BlockPool::blocks). */
#include "alloc_internal.h"

static int key_less(size_t sa, uintptr_t pa, size_t sb, uintptr_t pb)
{
    return sa < sb || (sa == sb && pa < pb);
}

static int block_less(const ga_block *a, const ga_block *b)
{
    return key_less(a->size, a->ptr, b->size, b->ptr);
}

static uint32_t next_prio(ga_tree *t)
{
    uint64_t x = t->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    t->rng = x;
    return (uint32_t)(x >> 32);
}

void ga_tree_init(ga_tree *t, uint64_t seed)
{
    t->root = NULL;
    t->count = 0;
    t->rng = seed ? seed : 0x9e3779b97f4a7c15ull;
}

/* Splits n into keys < b (*l) and keys > b (*r). */
static void split(ga_block *n, const ga_block *b, ga_block **l, ga_block **r)
{
    if (!n) {
        *l = *r = NULL;
    } else if (block_less(n, b)) {
        split(n->right, b, &n->right, r);
        *l = n;
    } else {
        split(n->left, b, l, &n->left);
        *r = n;
    }
}

/* Joins l and r where every key of l < every key of r. */
static ga_block *merge(ga_block *l, ga_block *r)
{
    if (!l)
        return r;
    if (!r)
        return l;
    if (l->prio > r->prio) {
        l->right = merge(l->right, r);
        return l;
    }
    r->left = merge(l, r->left);
    return r;
}

void ga_tree_insert(ga_tree *t, ga_block *b)
{
    ga_block *l, *r;
    b->left = b->right = NULL;
    b->prio = next_prio(t);
    split(t->root, b, &l, &r);
    t->root = merge(merge(l, b), r);
    t->count++;
}

static ga_block *erase(ga_block *n, const ga_block *b)
{
    if (n == b)
        return merge(n->left, n->right);
    if (block_less(b, n))
        n->left = erase(n->left, b);
    else
        n->right = erase(n->right, b);
    return n;
}

void ga_tree_remove(ga_tree *t, ga_block *b)
{
    t->root = erase(t->root, b);
    b->left = b->right = NULL;
    t->count--;
}

ga_block *ga_tree_lower_bound(const ga_tree *t, size_t size)
{
    ga_block *best = NULL;
    for (ga_block *n = t->root; n;) {
        if (n->size >= size) {
            best = n;
            n = n->left;
        } else {
            n = n->right;
        }
    }
    return best;
}

ga_block *ga_tree_max(const ga_tree *t)
{
    ga_block *n = t->root;
    while (n && n->right)
        n = n->right;
    return n;
}

static size_t height(const ga_block *n)
{
    if (!n)
        return 0;
    size_t l = height(n->left), r = height(n->right);
    return 1 + (l > r ? l : r);
}

size_t ga_tree_height(const ga_tree *t)
{
    return height(t->root);
}
