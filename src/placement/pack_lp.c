/* SPDX-License-Identifier: Apache-2.0 */
/* Dual prices of GPU shares: the fractional bin-packing (cutting-stock) LP of a workload's shares,
 * solved by column generation with GLPK's simplex and an unbounded-knapsack pricing step. */
#include "placement_internal.h"

#include "gpushare/error.h"

#include <glpk.h>
#include <stdlib.h>
#include <string.h>

/* Column generation stops when no pattern is worth more than a GPU by this much (above the
 * simplex's own tolerance, so that a pattern already in the LP is never added again). */
#define PRICE_EPS 1e-6
/* More columns than this means the LP is not converging: give up (GS_EIO). */
#define MAX_COLUMNS 20000

/* The most valuable pattern at prices price[]: best[c] is the value of room c, pick[c] the size
 * that reaches it (n when room c is best left as room c - 1). Fills count[]; returns the value. */
static double knapsack(const uint32_t *size, const double *price, uint32_t n, double *best,
                       uint32_t *pick, int *count)
{
    best[0] = 0;
    pick[0] = n;
    for (uint32_t c = 1; c <= GS_PLACE_MILLI; c++) {
        best[c] = best[c - 1];
        pick[c] = n;
        for (uint32_t i = 0; i < n; i++) {
            if (size[i] <= c && best[c - size[i]] + price[i] > best[c] + PRICE_EPS) {
                best[c] = best[c - size[i]] + price[i];
                pick[c] = i;
            }
        }
    }
    memset(count, 0, n * sizeof(*count));
    for (uint32_t c = GS_PLACE_MILLI; c > 0;) {
        if (pick[c] == n) {
            c--;
        } else {
            count[pick[c]]++;
            c -= size[pick[c]];
        }
    }
    return best[GS_PLACE_MILLI];
}

/* Adds one column (a pattern: count[i] tasks of size i on one GPU) costing one GPU. */
static void add_pattern(glp_prob *lp, const int *count, uint32_t n, int *ind, double *val)
{
    int col = glp_add_cols(lp, 1), len = 0;
    glp_set_col_bnds(lp, col, GLP_LO, 0.0, 0.0);
    glp_set_obj_coef(lp, col, 1.0);
    for (uint32_t i = 0; i < n; i++) {
        if (count[i] > 0) {
            len++;
            ind[len] = (int)i + 1;
            val[len] = count[i];
        }
    }
    glp_set_mat_col(lp, col, len, ind, val);
}

/* Solves the restricted LP and reads the row duals into price[]. Returns 0 or GS_EIO. */
static int solve(glp_prob *lp, uint32_t n, double *price)
{
    glp_smcp parm;
    glp_init_smcp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    if (glp_simplex(lp, &parm) != 0 || glp_get_status(lp) != GLP_OPT)
        return GS_EIO;
    for (uint32_t i = 0; i < n; i++) {
        double y = glp_get_row_dual(lp, (int)i + 1);
        price[i] = y > 0 ? y : 0;
    }
    return 0;
}

/* Column generation from the one-size patterns; price[] ends as the optimal duals. */
static int generate(glp_prob *lp, const uint32_t *size, uint32_t n, double *price, int *ind,
                    double *val, double *best, uint32_t *pick, int *count)
{
    for (uint32_t i = 0; i < n; i++) {
        memset(count, 0, n * sizeof(*count));
        count[i] = (int)(GS_PLACE_MILLI / size[i]);
        add_pattern(lp, count, n, ind, val);
    }
    for (;;) {
        int result = solve(lp, n, price);
        if (result != 0)
            return result;
        if (knapsack(size, price, n, best, pick, count) <= 1.0 + PRICE_EPS)
            return 0;
        if (glp_get_num_cols(lp) >= MAX_COLUMNS)
            return GS_EIO;
        add_pattern(lp, count, n, ind, val);
    }
}

int gs__pack_lp_prices(const uint32_t *size, const double *demand, uint32_t n, double *price)
{
    if (n == 0)
        return 0;
    for (uint32_t i = 0; i < n; i++) {
        if (size[i] == 0 || size[i] > GS_PLACE_MILLI || !(demand[i] > 0))
            return GS_EINVAL;
    }
    int *ind = malloc((n + 1) * sizeof(*ind)), *count = malloc(n * sizeof(*count));
    double *val = malloc((n + 1) * sizeof(*val));
    double *best = malloc((GS_PLACE_MILLI + 1) * sizeof(*best));
    uint32_t *pick = malloc((GS_PLACE_MILLI + 1) * sizeof(*pick));
    glp_prob *lp = NULL;
    int result = GS_ENOMEM;
    if (ind == NULL || count == NULL || val == NULL || best == NULL || pick == NULL)
        goto out;
    lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_rows(lp, (int)n);
    for (uint32_t i = 0; i < n; i++)
        glp_set_row_bnds(lp, (int)i + 1, GLP_LO, demand[i], 0.0);
    result = generate(lp, size, n, price, ind, val, best, pick, count);
out:
    if (lp != NULL)
        glp_delete_prob(lp);
    free(ind);
    free(count);
    free(val);
    free(best);
    free(pick);
    return result;
}
