import express from 'express';
import { COOKIE, sameOrigin, whoIs } from './console-guards.js';
import { loginPage } from './pages.js';
import type { RouteDeps } from './console-routes.js';

/** The sign-in form's post: a token the endpoint accepts becomes an HttpOnly, SameSite cookie. */
export function loginRoute(
  router: express.Router,
  { options, basePath, page, send }: RouteDeps & { basePath: string },
): void {
  router.post(
    '/login',
    sameOrigin,
    express.urlencoded({ extended: false, limit: '8kb' }),
    (req, res, next) => {
      const token = (req.body as { token?: unknown } | undefined)?.token;
      if (typeof token !== 'string' || options.authenticate === undefined)
        return void res.redirect(303, basePath);
      req.headers.authorization = `Bearer ${token}`;
      void whoIs(options, req)
        .then((visibility) => {
          if (visibility === undefined) return send(res, 401, loginPage(page(), true));
          res.cookie(COOKIE, token, { httpOnly: true, sameSite: 'strict', path: basePath });
          res.redirect(303, basePath);
        })
        .catch(next);
    },
  );
}
