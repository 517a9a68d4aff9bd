/* SPDX-License-Identifier: Apache-2.0 */
/* Dual prices of GPU shares: the fractional bin-packing (cutting-stock) LP of a workload's shares,
 * solved by column generation with COIN-OR CLP's simplex (its C interface) and an
 * unbounded-knapsack pricing step. CLP is C++: if it cannot allocate, its exception ends the
 * process (std::terminate), as no C caller can catch it. */
#include "placement_internal.h"

#include "gpushare/error.h"

#include <Clp_C_Interface.h>
#include <float.h>
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
static void add_pattern(Clp_Simplex *lp, const int *count, uint32_t n, int *row, double *val)
{
    CoinBigIndex start[2] = {0, 0};
    double lower = 0.0, upper = DBL_MAX, cost = 1.0;
    for (uint32_t i = 0; i < n; i++) {
        if (count[i] > 0) {
            row[start[1]] = (int)i;
            val[start[1]++] = count[i];
        }
    }
    Clp_addColumns(lp, 1, &lower, &upper, &cost, start, row, val);
}

/* Solves the restricted LP (the primal simplex, from the last basis: a column added leaves it
 * primal feasible) and reads the row duals into price[]. Returns 0 or GS_EIO. */
static int solve(Clp_Simplex *lp, uint32_t n, double *price)
{
    Clp_primal(lp, 0);
    if (!Clp_isProvenOptimal(lp))
        return GS_EIO;
    const double *y = Clp_dualRowSolution(lp);
    for (uint32_t i = 0; i < n; i++)
        price[i] = y[i] > 0 ? y[i] : 0;
    return 0;
}

/* Column generation from the one-size patterns; price[] ends as the optimal duals. */
static int generate(Clp_Simplex *lp, const uint32_t *size, uint32_t n, double *price, int *row,
                    double *val, double *best, uint32_t *pick, int *count)
{
    for (uint32_t i = 0; i < n; i++) {
        memset(count, 0, n * sizeof(*count));
        count[i] = (int)(GS_PLACE_MILLI / size[i]);
        add_pattern(lp, count, n, row, val);
    }
    for (;;) {
        int result = solve(lp, n, price);
        if (result != 0)
            return result;
        if (knapsack(size, price, n, best, pick, count) <= 1.0 + PRICE_EPS)
            return 0;
        if (Clp_getNumCols(lp) >= MAX_COLUMNS)
            return GS_EIO;
        add_pattern(lp, count, n, row, val);
    }
}

/* A new LP: a row a size, at least its demand of tasks (no upper bound), and no columns yet. */
static Clp_Simplex *new_lp(const double *demand, uint32_t n)
{
    Clp_Simplex *lp = Clp_newModel();
    if (lp == NULL)
        return NULL;
    Clp_setLogLevel(lp, 0);
    Clp_setOptimizationDirection(lp, 1.0); /* minimise */
    Clp_resize(lp, (int)n, 0);             /* rows from -inf to +inf */
    Clp_chgRowLower(lp, demand);
    return lp;
}

int gs__pack_lp_prices(const uint32_t *size, const double *demand, uint32_t n, double *price)
{
    if (n == 0)
        return 0;
    for (uint32_t i = 0; i < n; i++) {
        if (size[i] == 0 || size[i] > GS_PLACE_MILLI || !(demand[i] > 0))
            return GS_EINVAL;
    }
    int *row = malloc(n * sizeof(*row)), *count = malloc(n * sizeof(*count));
    double *val = malloc(n * sizeof(*val));
    double *best = malloc((GS_PLACE_MILLI + 1) * sizeof(*best));
    uint32_t *pick = malloc((GS_PLACE_MILLI + 1) * sizeof(*pick));
    Clp_Simplex *lp = NULL;
    int result = GS_ENOMEM;
    if (row == NULL || count == NULL || val == NULL || best == NULL || pick == NULL)
        goto out;
    if ((lp = new_lp(demand, n)) == NULL)
        goto out;
    result = generate(lp, size, n, price, row, val, best, pick, count);
out:
    if (lp != NULL)
        Clp_deleteModel(lp);
    free(row);
    free(count);
    free(val);
    free(best);
    free(pick);
    return result;
}
