// The demo screen: configures the global Client from the dev-only config endpoint, then makes an authenticated call.
(async () => {
  const status = document.getElementById('status');
  try {
    const config = await (await fetch('/dev/config')).json();
    Client.configure(config);
    const app = await Client.App.info();
    document.getElementById('app-name').textContent = app.name;
    document.getElementById('app-id').textContent = String(app.id);
    document.getElementById('org-id').textContent = String(app.organizationId);
    document.getElementById('backend').textContent = Client.baseUrl;
    document.getElementById('app-card').hidden = false;
    status.textContent = 'Connected';
    status.dataset.state = 'ok';
  } catch (error) {
    status.textContent = `Failed: ${error.code ?? ''} ${error.message}`;
    status.dataset.state = 'error';
  }
})();
