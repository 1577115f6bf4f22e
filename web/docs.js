// The OpenAPI document rendered by Swagger UI, from this service alone:
// no validator badge (it would ask another host), no try-it-out by default.
window.ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#reference',
  validatorUrl: null,
  deepLinking: true,
  docExpansion: 'list',
  defaultModelsExpandDepth: 0,
});
