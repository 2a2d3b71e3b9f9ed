#include "proxy.h"

void proxy_init(struct proxy_ctx *ctx)
{
    pthread_mutex_init(&ctx->stats_lock, NULL);
    ctx->requests = 0;
}

void proxy_request(struct proxy_ctx *ctx)
{
    STAT_L(ctx);
    ctx->requests++;
    STAT_UL(ctx);
}
