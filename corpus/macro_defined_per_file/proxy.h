#ifndef PROXY_H
#define PROXY_H

#include <pthread.h>

/* memcached's proxy.h: STAT_L takes the proxy context's stats_lock ... */
#define STAT_L(ctx) pthread_mutex_lock(&ctx->stats_lock);
#define STAT_UL(ctx) pthread_mutex_unlock(&ctx->stats_lock);

struct proxy_ctx {
    pthread_mutex_t stats_lock;
    long requests;
};

void proxy_init(struct proxy_ctx *ctx);
void proxy_request(struct proxy_ctx *ctx);

#endif
